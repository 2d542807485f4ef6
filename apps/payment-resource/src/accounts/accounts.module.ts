import { Module } from '@nestjs/common';
import { AccountsController } from './http/accounts.controller';
import { AccountListController } from '../payouts/http/console-reads.controller';
import { IntakeController } from './http/intake.controller';
import { IntakeRepository } from './persistence/intake.repository';
import { LedgerModule } from '../ledger/ledger.module';
import { PaydbModule } from '../persistence/paydb.module';
import { IntakeService } from './service/intake.service';
import { PayoutsModule } from '../payouts/payouts.module';

/** Accounts and intake: opening accounts, taking payout requests, account views. */
@Module({
  imports: [PaydbModule, LedgerModule, PayoutsModule],
  controllers: [AccountListController, AccountsController, IntakeController],
  providers: [IntakeRepository, IntakeService],
})
export class AccountsModule {}
