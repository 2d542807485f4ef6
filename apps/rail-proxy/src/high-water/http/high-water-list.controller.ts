import { Controller, Query } from '@nestjs/common';
import { AdvisoryListRoute, readLimit, schemaRef } from '@dlock/http-contract';
import { ApiTags } from '@nestjs/swagger';
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

  @AdvisoryListRoute({
    summary: "Every account's durable high-water mark, by id (advisory)",
    operation: 'high-water.list',
    description: 'High-water marks',
    schema: schemaRef('HighWaterList'),
  })
  list(@Query() query: Record<string, unknown>): Promise<HighWaterList> {
    return this.marks.list(readLimit(query));
  }
}
