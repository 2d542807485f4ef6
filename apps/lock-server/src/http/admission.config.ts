import type { Request } from 'express';
import type { AdmissionLimits } from '@dlock/http-contract';
import type { LockServerConfig } from '../config';

/** L2 heartbeat, L3 close, L6 release: what keeps or gives back what an identity holds. */
const GIVING_BACK = [
  { method: 'POST', path: /^\/v1\/sessions\/[^/]+\/heartbeat$/ },
  { method: 'DELETE', path: /^\/v1\/sessions\/[^/]+$/ },
  { method: 'DELETE', path: /^\/v1\/locks\/[^/]+$/ },
];

/**
 * The lock-server's requests in flight per identity (docs/lock-server.md,
 * "Limits"). Heartbeats, closes and releases are never shed, as they are
 * never rate-limited: refusing them would keep locks held longer, the
 * opposite of relief.
 */
export function lockServerAdmission(config: LockServerConfig): AdmissionLimits {
  return {
    inFlightPerOwnerMax: config.LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX,
    retryAfterMs: config.LOCK_CONTENTION_RETRY_AFTER_MS,
    exempt: (req: Request) =>
      GIVING_BACK.some((route) => route.method === req.method && route.path.test(req.path)),
  };
}
