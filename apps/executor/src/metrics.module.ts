import { Module } from '@nestjs/common';
import { ExecutorMetrics } from './executor.metrics';

/** One instance of the executor's metrics for every feature (a series registers once). */
@Module({ providers: [ExecutorMetrics], exports: [ExecutorMetrics] })
export class ExecutorMetricsModule {}
