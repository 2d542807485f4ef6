import { Module } from '@nestjs/common';
import { FencePointModule } from '@dlock/lock-nest';
import { FencePointAudit, SafetyEvents } from '@dlock/observability';
import { fencePointRouteDecorators } from '@dlock/payout-contract/fence-floor';
import { PAYMENT_CONFIG, type PaymentConfig } from '../config';
import { PaydbModule } from '../persistence/paydb.module';
import { FenceFloorController } from './http/fence-floor.controller';
import { AccountFenceFloors } from './persistence/account-fence-floors.store';
import { FenceFloorRepository } from './persistence/fence-floor.repository';
import { FenceFloorService } from './service/fence-floor.service';

/** The account fence as a fence point's memory, for FencePointModule to raise. */
@Module({
  imports: [PaydbModule],
  providers: [FenceFloorRepository, AccountFenceFloors],
  exports: [AccountFenceFloors],
})
export class AccountFenceFloorsModule {}

/**
 * Revocation fencing (docs/security.md, "Revocation notices"): this app is a
 * fence point of `payout:` keys. The lock-server presents a revoke's notice on
 * the generic `POST /v1/revocation-notices`; the reconciler and operators
 * raise by account on `POST /v1/accounts/{id}/fence-floor`. Both go through
 * the one FencePointService.
 */
@Module({
  imports: [
    FencePointModule.forRootAsync({
      imports: [AccountFenceFloorsModule],
      inject: [PAYMENT_CONFIG, AccountFenceFloors, SafetyEvents],
      useFactory: (config: PaymentConfig, floors: AccountFenceFloors, safety: SafetyEvents) => ({
        jwks: config.GRANT_JWKS,
        floors: [floors],
        events: new FencePointAudit('payment-resource', safety),
      }),
      route: { decorators: fencePointRouteDecorators() },
    }),
  ],
  controllers: [FenceFloorController],
  providers: [FenceFloorService],
})
export class FenceFloorModule {}
