import { Module } from '@nestjs/common';
import { ReconcilerMetricsModule } from '../metrics.module';
import { PeersModule } from '../peers/peers.module';
import { DatabasesModule } from '../persistence/databases.module';
import { AuditChainService } from './service/audit-chain.service';
import { DetectiveService } from './service/detective.service';
import { RailSweepService } from './service/rail-sweep.service';
import { SubmissionGrants } from './service/submission-grants.service';

/** The checks that find what went wrong: invariants, audit chains, the rail sweep (docs/reconciler.md). */
@Module({
  imports: [DatabasesModule, PeersModule, ReconcilerMetricsModule],
  providers: [SubmissionGrants, DetectiveService, AuditChainService, RailSweepService],
  exports: [DetectiveService, AuditChainService, RailSweepService],
})
export class DetectiveModule {}
