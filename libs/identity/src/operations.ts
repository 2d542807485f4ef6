/**
 * Every operation a route may name with `@Operation` (docs/security.md, "Authorisation
 * policy"). A policy naming anything else is refused at boot, so a typo cannot
 * silently grant nothing (or everything). Grouped by the service that serves them.
 */
export const OPERATIONS = [
  // lock-server
  'sessions.open',
  'sessions.heartbeat',
  'sessions.close',
  'sessions.list',
  'locks.acquire',
  'locks.renew',
  'locks.release',
  'locks.inspect',
  'locks.list',
  // Not a route: sees the token and session id of another identity's live grant (L7, listings).
  'locks.read-grants',
  'locks.revoke',
  'revocations.approve',
  'revocations.list',
  // payment-resource
  'accounts.create',
  'accounts.deposit',
  'accounts.read',
  'accounts.list',
  'accounts.fence-floor',
  'payouts.create',
  'payouts.list',
  'payouts.read',
  'payouts.stats',
  'payouts.claim',
  'payouts.rail-outcome',
  'payouts.post',
  'payouts.abandon',
  'payouts.resolve',
  // rail-proxy
  'rail.submit',
  'rail.read',
  // The rail's record of a payout, with the receipt it earns (docs/rail.md, "Receipts").
  'rail.evidence',
  'high-water.floor',
  'high-water.list',
  // reconciler
  'reconciler.report',
  // Any fence point of dlock's own (payment-resource, rail-proxy): the lock-server presents a
  // revocation notice before its revoke answers (docs/security.md, "Revocation notices").
  'fence-points.raise',
  // every service
  'safety-events.read',
  'debug.spans',
  // Sending X-Acting-For: acting for a signed-in person (the console, docs/security.md).
  'identity.act-for',
] as const;

export type OperationName = (typeof OPERATIONS)[number];

const KNOWN: ReadonlySet<string> = new Set(OPERATIONS);

export function isOperationName(value: unknown): value is OperationName {
  return typeof value === 'string' && KNOWN.has(value);
}
