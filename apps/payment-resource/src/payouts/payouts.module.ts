import { Module } from '@nestjs/common';
import { PayoutStatsController } from './http/console-reads.controller';
import { PayoutsController } from './http/payouts.controller';
import { PaymentMetrics } from '../payment.metrics';
import { PayoutSafetyEvents } from '../payout-safety-events.service';
import { FastTransitionRepository } from './persistence/fast-transition.repository';
import { FenceRepository } from './persistence/fence.repository';
import { IdempotencyRepository } from './persistence/idempotency.repository';
import { LedgerModule } from '../ledger/ledger.module';
import { PaydbModule } from '../persistence/paydb.module';
import { PayoutRepository } from './persistence/payout.repository';
import { TransitionLogRepository } from './persistence/transition-log.repository';
import { FencedWriter } from './service/fenced-writer.service';
import { GrantCheck } from './service/grant-check.service';
import { InstructionSigner } from './service/instruction-signer.service';
import { ReceiptCheck } from './service/receipt-check.service';
import { PayoutCommands } from './service/payout-commands.service';
import { PayoutQueries } from './service/payout-queries.service';
import { SeenPayouts } from './service/seen-payouts.service';
import { TransactionalPath } from './service/transactional-path.service';

/** Payouts: the fenced writes of the executor and their reads (docs/payment-resource.md). */
@Module({
  imports: [PaydbModule, LedgerModule],
  // Stats before the payout routes: `v1/payouts/:payoutId` would take `stats` as an id.
  controllers: [PayoutStatsController, PayoutsController],
  providers: [
    PaymentMetrics,
    PayoutSafetyEvents,
    FenceRepository,
    FastTransitionRepository,
    PayoutRepository,
    IdempotencyRepository,
    TransitionLogRepository,
    FencedWriter,
    GrantCheck,
    InstructionSigner,
    ReceiptCheck,
    PayoutCommands,
    PayoutQueries,
    SeenPayouts,
    TransactionalPath,
  ],
  exports: [PayoutRepository, PayoutQueries, InstructionSigner],
})
export class PayoutsModule {}
