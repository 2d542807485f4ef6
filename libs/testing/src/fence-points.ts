/** One entry of the lock-server's FENCE_POINTS (docs/lock-server.md). */
export interface FencePointEntry {
  name: string;
  prefix: string;
  url: string;
  audience?: string;
}

/** A fence point's generic route on a service at `baseUrl` (FencePointModule's default path). */
export const revocationNoticesUrl = (baseUrl: string): string => `${baseUrl}/v1/revocation-notices`;

/**
 * FENCE_POINTS of the demo system: `payout:` keys are guarded at
 * payment-resource (the account fence) and rail-proxy (the high-water mark),
 * each reached with the lock-server's token for its audience.
 */
export function payoutFencePoints(paymentsUrl: string, proxyUrl: string): string {
  const entries: FencePointEntry[] = [
    {
      name: 'payment-resource',
      prefix: 'payout:',
      url: revocationNoticesUrl(paymentsUrl),
      audience: 'payment-resource',
    },
    {
      name: 'rail-proxy',
      prefix: 'payout:',
      url: revocationNoticesUrl(proxyUrl),
      audience: 'rail-proxy',
    },
  ];
  return JSON.stringify(entries);
}
