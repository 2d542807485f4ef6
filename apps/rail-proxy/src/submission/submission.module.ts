import { Module } from '@nestjs/common';
import { IdempotencyRepository } from './persistence/idempotency.repository';
import { RailProxyMetrics } from '../rail-proxy.metrics';
import { RailClient } from './clients/rail.client';
import { SubmissionProofs } from './service/submission-proofs.service';
import { ReceiptSigner } from './service/receipt-signer.service';
import { RailEvidenceService } from './service/rail-evidence.service';
import { RailRecordClient } from './clients/rail-record.client';
import { SubmissionRepository } from './persistence/submission.repository';
import { SubmissionService } from './service/submission.service';
import { SubmissionsController } from './http/submissions.controller';

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
    ReceiptSigner,
    RailRecordClient,
    RailEvidenceService,
  ],
  exports: [ReceiptSigner],
})
export class SubmissionsModule {}
