import { Module } from '@nestjs/common';
import { ExecutionModule } from '../execution/execution.module';
import { ExecutorMetricsModule } from '../metrics.module';
import { PayoutPollingLoop } from './service/payout-polling.loop';

/** The loop that finds due payouts and hands each to one attempt (docs/executor.md). */
@Module({
  imports: [ExecutionModule, ExecutorMetricsModule],
  providers: [PayoutPollingLoop],
})
export class PollingModule {}
