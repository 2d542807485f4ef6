/**
 * The payout services' operations for the authorisation policy
 * (docs/security.md, "Authorisation policy"), by the service that serves them.
 * Every dlock app reads the one policy file that grants them, so every dlock
 * app registers them with `registerOperations` of @dlock/identity when its
 * module is loaded.
 */
export const PAYOUT_OPERATIONS = [
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
] as const;
