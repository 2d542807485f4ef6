import { Controller, Get, Query } from '@nestjs/common';
import type { AccountList, PayoutStats } from '@dlock/payout-contract';
import {
  AdvisoryListRoute,
  Operation,
  parseIntQuery,
  readLimit,
  schemaRef,
} from '@dlock/http-contract';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { PayoutQueries } from '../service/payout-queries.service';

/** `windowSeconds` of GET /v1/payouts/stats: 10 s .. 1 h, 5 min when absent. */
const STATS_QUERY = { windowSeconds: { min: 10, max: 3600, default: 300 } };

/** Advisory reads for the operator console (docs/payment-resource.md, "Console reads"). */
@ApiTags('accounts')
@Controller('v1/accounts')
export class AccountListController {
  constructor(private readonly queries: PayoutQueries) {}

  @AdvisoryListRoute({
    summary: 'Customer accounts with balance and fence, by id (advisory)',
    operation: 'accounts.list',
    description: 'Accounts',
    schema: schemaRef('AccountList'),
  })
  list(@Query() query: Record<string, unknown>): Promise<AccountList> {
    return this.queries.accountList(readLimit(query));
  }
}

@ApiTags('payouts')
@Controller('v1/payouts/stats')
export class PayoutStatsController {
  constructor(private readonly queries: PayoutQueries) {}

  @ApiOperation({ summary: 'Payouts by state, posted per bucket and latency over a window' })
  @ApiQuery({
    name: 'windowSeconds',
    required: false,
    schema: { type: 'integer', minimum: 10, maximum: 3600, default: 300 },
  })
  @ApiOkResponse({ description: 'Statistics', schema: schemaRef('PayoutStats') })
  @Get()
  @Operation('payouts.stats')
  stats(@Query() query: Record<string, unknown>): Promise<PayoutStats> {
    return this.queries.stats(parseIntQuery(query, STATS_QUERY).windowSeconds);
  }
}
