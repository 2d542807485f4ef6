import { Controller, Get, Query } from '@nestjs/common';
import {
  ApiReadLimitQuery,
  Operation,
  parseIntQuery,
  READ_LIMIT,
  schemaRef,
} from '@dlock/http-contract';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { HighWaterList } from '@dlock/payout-contract';
import { HighWaterListService } from '../service/high-water-list.service';

/**
 * Every account's durable high-water mark, for the operator console to set
 * beside payment-resource's fence (docs/rail.md, "Console reads"). Advisory.
 */
@ApiTags('rail')
@Controller('v1/rail/high-water')
export class HighWaterListController {
  constructor(private readonly marks: HighWaterListService) {}

  @ApiOperation({ summary: "Every account's durable high-water mark, by id (advisory)" })
  @ApiReadLimitQuery()
  @ApiOkResponse({ description: 'High-water marks', schema: schemaRef('HighWaterList') })
  @Get()
  @Operation('high-water.list')
  async list(@Query() query: Record<string, unknown>): Promise<HighWaterList> {
    const { limit } = parseIntQuery(query, { limit: READ_LIMIT });
    return this.marks.list(limit);
  }
}
