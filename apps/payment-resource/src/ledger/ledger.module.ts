import { Module } from '@nestjs/common';
import { AccountRepository } from './persistence/account.repository';
import { LedgerRepository } from './persistence/ledger.repository';
import { PaydbModule } from '../persistence/paydb.module';

/** Accounts and their double-entry ledger (docs/payment-resource.md): shared by payouts and intake. */
@Module({
  imports: [PaydbModule],
  providers: [AccountRepository, LedgerRepository],
  exports: [AccountRepository, LedgerRepository],
})
export class LedgerModule {}
