import { fileTokenProvider } from '@dlock/identity';
import { Module } from '@nestjs/common';
import { PaymentResourceClient, RailLookupClient, RailProxyClient } from '@dlock/payout-contract';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';

/**
 * The services the reconciler calls, shared by its features: payment-resource
 * (resolutions, floor raises), the rail's own lookup (evidence, the rail sweep)
 * and rail-proxy (floor raises only: built without a submit budget, it cannot submit).
 */
@Module({
  providers: [
    {
      provide: PaymentResourceClient,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) =>
        new PaymentResourceClient(
          config.PAYMENT_RESOURCE_URL,
          config.OWNER_ID,
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'payment-resource'),
        ),
    },
    {
      provide: RailLookupClient,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => new RailLookupClient(config.RAIL_STUB_URL),
    },
    {
      provide: RailProxyClient,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) =>
        new RailProxyClient(
          config.RAIL_PROXY_URL,
          config.OWNER_ID,
          undefined,
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'rail-proxy'),
        ),
    },
  ],
  exports: [PaymentResourceClient, RailLookupClient, RailProxyClient],
})
export class PeersModule {}
