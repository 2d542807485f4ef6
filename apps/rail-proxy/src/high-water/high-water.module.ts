import { Module } from '@nestjs/common';
import { FencePointModule } from '@dlock/lock-nest';
import { FencePointAudit, SafetyEvents } from '@dlock/observability';
import { fencePointRouteDecorators } from '@dlock/payout-contract/fence-floor';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../config';
import { HighWaterListController } from './http/high-water-list.controller';
import { HighWaterListRepository } from './persistence/high-water-list.repository';
import { HighWaterFloorController } from './http/high-water-floor.controller';
import { HighWaterFenceFloors } from './persistence/high-water-fence-floors.store';
import { HighWaterFloorRepository } from './persistence/high-water-floor.repository';
import { HighWaterFloorService } from './service/high-water-floor.service';
import { HighWaterListService } from './service/high-water-list.service';

/** The high-water mark as a fence point's memory, for FencePointModule to raise. */
@Module({
  providers: [HighWaterFloorRepository, HighWaterFenceFloors],
  exports: [HighWaterFenceFloors],
})
export class HighWaterFenceFloorsModule {}

/**
 * The durable high-water marks: listed for the console, raised by revocation
 * fencing (docs/rail.md). This app is a fence point of `payout:` keys: the
 * lock-server presents a revoke's notice on `POST /v1/revocation-notices`, the
 * reconciler and operators raise by account; one FencePointService for both.
 */
@Module({
  imports: [
    FencePointModule.forRootAsync({
      imports: [HighWaterFenceFloorsModule],
      inject: [RAIL_PROXY_CONFIG, HighWaterFenceFloors, SafetyEvents],
      useFactory: (
        config: RailProxyConfig,
        floors: HighWaterFenceFloors,
        safety: SafetyEvents,
      ) => ({
        jwks: config.GRANT_JWKS,
        floors: [floors],
        events: new FencePointAudit('rail-proxy', safety),
      }),
      route: { decorators: fencePointRouteDecorators() },
    }),
  ],
  controllers: [HighWaterFloorController, HighWaterListController],
  providers: [HighWaterFloorService, HighWaterListRepository, HighWaterListService],
})
export class HighWaterModule {}
