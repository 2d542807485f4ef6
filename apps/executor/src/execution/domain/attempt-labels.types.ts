// The label values of the executor's attempt metrics (metrics.ts): what an attempt can end
// as, which hop refused it and its steps. Pure data, so the domain can name them.

/** The four pinned labels of payout_execute_seconds (docs/operations.md). */
export const EXECUTE_LABELS = ['posted', 'failed', 'abandoned', 'ambiguous'] as const;
export type ExecuteLabel = (typeof EXECUTE_LABELS)[number];

/** The hop that refused a payout's request as invalid (400 VALIDATION_FAILED). */
export const INVALID_HOPS = ['payment_resource', 'rail_proxy'] as const;
export type InvalidHop = (typeof INVALID_HOPS)[number];

/** Steps of the critical section, timed separately (the bench reads the lock-server's share). */
export const STEPS = [
  'acquire',
  'reread',
  'claim',
  'mark_submitted',
  'submit',
  'proxy_record',
  'record_outcome',
  'post',
  'release',
] as const;
export type Step = (typeof STEPS)[number];
