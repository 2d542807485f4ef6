import { Module } from '@nestjs/common';
import {
  PaymentResourceClient,
  payoutPeerProviders,
  RailLookupClient,
  RailProxyClient,
} from '@dlock/payout-contract';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';

/**
 * The services the reconciler calls, shared by its features: payment-resource
 * (resolutions, floor raises), the rail's own lookup (evidence, the rail sweep)
 * and rail-proxy (floor raises only: built without a submit budget, it cannot submit).
 */
@Module({
  providers: [
    ...payoutPeerProviders(RECONCILER_CONFIG),
    {
      provide: RailLookupClient,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => new RailLookupClient(config.RAIL_STUB_URL),
    },
  ],
  exports: [PaymentResourceClient, RailLookupClient, RailProxyClient],
})
export class PeersModule {}
