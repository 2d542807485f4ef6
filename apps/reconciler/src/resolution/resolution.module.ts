import { Module } from '@nestjs/common';
import { ReconcilerMetricsModule } from '../metrics.module';
import { PeersModule } from '../peers/peers.module';
import { DatabasesModule } from '../persistence/databases.module';
import { PayoutResolver } from './service/payout-resolver.service';
import { ResolutionService } from './service/resolution.service';

/** RAIL_AMBIGUOUS payouts ended on the rail's evidence (docs/reconciler.md). */
@Module({
  imports: [DatabasesModule, PeersModule, ReconcilerMetricsModule],
  providers: [PayoutResolver, ResolutionService],
  exports: [ResolutionService],
})
export class ResolutionModule {}
