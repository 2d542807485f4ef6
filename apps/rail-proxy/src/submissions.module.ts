import { Module } from '@nestjs/common';
import { IdempotencyRepository } from './idempotency.repository';
import { RailProxyMetrics } from './metrics';
import { RailClient } from './rail-client';
import { SubmissionProofs } from './submission-proofs';
import { SubmissionRepository } from './submission.repository';
import { SubmissionService } from './submission.service';
import { SubmissionsController } from './submissions.controller';

/** Submissions: one per payout, intent recorded before the rail call (docs/rail.md). */
@Module({
  controllers: [SubmissionsController],
  providers: [
    RailProxyMetrics,
    RailClient,
    SubmissionRepository,
    IdempotencyRepository,
    SubmissionService,
    SubmissionProofs,
  ],
})
export class SubmissionsModule {}
