import { Controller, Get, Param } from '@nestjs/common';
import type { AccountView } from '@dlock/payout-contract';
import { PayoutQueries } from '../service/payout-queries.service';
import { accountIdParam } from './params';
import { Operation } from '@dlock/http-contract';

@Controller('v1/accounts')
export class AccountsController {
  constructor(private readonly queries: PayoutQueries) {}

  /** P5: the balance and the ledger sum recomputed beside it (FR-25). */
  @Get(':accountId')
  @Operation('accounts.read')
  get(@Param('accountId') accountId: string): Promise<AccountView> {
    return this.queries.account(accountIdParam(accountId));
  }
}
