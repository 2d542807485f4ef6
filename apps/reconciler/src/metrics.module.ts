import { Module } from '@nestjs/common';
import { ReconcilerMetrics } from './reconciler.metrics';

/** One instance of the reconciler's metrics for every feature (a series registers once). */
@Module({ providers: [ReconcilerMetrics], exports: [ReconcilerMetrics] })
export class ReconcilerMetricsModule {}
