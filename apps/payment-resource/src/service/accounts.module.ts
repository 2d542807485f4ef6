import { Module } from '@nestjs/common';
import { AccountsController } from '../http/accounts.controller';
import { AccountListController } from '../http/console-reads.controller';
import { IntakeController } from '../http/intake.controller';
import { IntakeRepository } from '../persistence/intake.repository';
import { LedgerModule } from '../persistence/ledger.module';
import { PaydbModule } from '../persistence/paydb.module';
import { IntakeService } from './intake.service';
import { PayoutsModule } from './payouts.module';

/** Accounts and intake: opening accounts, taking payout requests, account views. */
@Module({
  imports: [PaydbModule, LedgerModule, PayoutsModule],
  controllers: [AccountListController, AccountsController, IntakeController],
  providers: [IntakeRepository, IntakeService],
})
export class AccountsModule {}
