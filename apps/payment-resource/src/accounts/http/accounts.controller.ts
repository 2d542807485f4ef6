import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiContractErrors, schemaRef } from '@dlock/http-contract';
import type { AccountView } from '@dlock/payout-contract';
import { PayoutQueries } from '../../payouts/service/payout-queries.service';
import { accountIdParam } from '../../http/route.params';
import { Operation } from '@dlock/http-contract';

@ApiTags('accounts')
@Controller('v1/accounts')
export class AccountsController {
  constructor(private readonly queries: PayoutQueries) {}

  /** P5: the balance and the ledger sum recomputed beside it (FR-25). */
  @ApiOperation({ summary: 'An account: balance, fence, and the ledger sum beside it' })
  @ApiParam({ name: 'accountId', schema: { type: 'string' } })
  @ApiOkResponse({ description: 'The account', schema: schemaRef('AccountView') })
  @ApiContractErrors('NOT_FOUND')
  @Get(':accountId')
  @Operation('accounts.read')
  get(@Param('accountId') accountId: string): Promise<AccountView> {
    return this.queries.account(accountIdParam(accountId));
  }
}
