import { Controller, Get, Query } from '@nestjs/common';
import type { AccountList, PayoutStats } from '@dlock/payout-contract';
import { parseIntQuery, READ_LIMIT } from '@dlock/http-contract';
import { PayoutQueries } from '../service/payout-queries.service';

/** `windowSeconds` of GET /v1/payouts/stats: 10 s .. 1 h, 5 min when absent. */
const STATS_QUERY = { windowSeconds: { min: 10, max: 3600, default: 300 } };

/** Advisory reads for the operator console (docs/payment-resource.md, "Console reads"). */
@Controller('v1/accounts')
export class AccountListController {
  constructor(private readonly queries: PayoutQueries) {}

  @Get()
  list(@Query() query: Record<string, unknown>): Promise<AccountList> {
    return this.queries.accountList(parseIntQuery(query, { limit: READ_LIMIT }).limit);
  }
}

@Controller('v1/payouts/stats')
export class PayoutStatsController {
  constructor(private readonly queries: PayoutQueries) {}

  @Get()
  stats(@Query() query: Record<string, unknown>): Promise<PayoutStats> {
    return this.queries.stats(parseIntQuery(query, STATS_QUERY).windowSeconds);
  }
}
