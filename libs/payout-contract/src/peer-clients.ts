import { fileTokenProvider } from '@dlock/identity';
import type { CallBudget } from '@dlock/http-client';
import { PaymentResourceClient } from './payment-resource.client';
import { RailProxyClient } from './rail-proxy.client';

/** The settings, under these names, of an app that calls the payout services as itself. */
export interface PayoutPeersConfig {
  readonly OWNER_ID: string;
  /** Where the app's tokens for each audience are mounted (docs/security.md). */
  readonly AUTH_TOKEN_DIR: string;
  readonly PAYMENT_RESOURCE_URL: string;
  readonly RAIL_PROXY_URL: string;
}

/**
 * The Nest providers of payment-resource's and rail-proxy's clients, built from the app's
 * configuration (provided as `configToken`) with its own token for each. Only an app that
 * submits to the rail gives `railSubmitBudget`: a client built without one cannot submit.
 */
export function payoutPeerProviders<C extends PayoutPeersConfig>(
  configToken: symbol,
  railSubmitBudget?: (config: C) => CallBudget,
) {
  return [
    {
      provide: PaymentResourceClient,
      inject: [configToken],
      useFactory: (config: C) =>
        new PaymentResourceClient(
          config.PAYMENT_RESOURCE_URL,
          config.OWNER_ID,
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'payment-resource'),
        ),
    },
    {
      provide: RailProxyClient,
      inject: [configToken],
      useFactory: (config: C) =>
        new RailProxyClient(
          config.RAIL_PROXY_URL,
          config.OWNER_ID,
          railSubmitBudget?.(config),
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'rail-proxy'),
        ),
    },
  ];
}
