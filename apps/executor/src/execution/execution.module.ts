import { Module } from '@nestjs/common';
import {
  PaymentResourceClient,
  payoutPeerProviders,
  RailProxyClient,
} from '@dlock/payout-contract';
import { EXECUTOR_CONFIG, type ExecutorConfig } from '../config';
import { HarnessAttemptHooks } from './service/harness-attempt.service';
import { ExecutorMetricsModule } from '../metrics.module';
import { AttemptHooks, NoAttemptHooks } from './domain/attempt-hooks.port';
import { ExecutionClock, MonotonicExecutionClock } from './domain/execution-clock.port';
import { submitReadTimeoutMs, SUBMIT_CONNECT_TIMEOUT_MS } from './domain/lease.rules';
import { PayoutExecutionService } from './service/payout-execution.service';

/** One attempt per payout, through payment-resource's and rail-proxy's clients (docs/executor.md). */
@Module({
  imports: [ExecutorMetricsModule],
  providers: [
    ...payoutPeerProviders(EXECUTOR_CONFIG, (config: ExecutorConfig) => ({
      connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
      readTimeoutMs: submitReadTimeoutMs(config.RAIL_READ_TIMEOUT_MS),
    })),
    {
      // The harness's crash and pause points exist only under DLOCK_HARNESS=1.
      provide: AttemptHooks,
      inject: [EXECUTOR_CONFIG],
      useFactory: (config: ExecutorConfig) =>
        config.DLOCK_HARNESS ? HarnessAttemptHooks.fromConfig(config) : new NoAttemptHooks(),
    },
    { provide: ExecutionClock, useClass: MonotonicExecutionClock },
    PayoutExecutionService,
  ],
  exports: [PaymentResourceClient, RailProxyClient, PayoutExecutionService],
})
export class ExecutionModule {}
