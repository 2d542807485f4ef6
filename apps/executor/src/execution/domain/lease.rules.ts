/**
 * Lease discipline (docs/executor.md, "Lease discipline"). Pure arithmetic, milliseconds.
 *
 * The submit hop may take up to connect (1 s) + read (rail read timeout + 2 s).
 * A worker starts it only while its own lock lease, as the client sees it,
 * covers that whole budget: `handle.leaseCovers(submitBudgetMs)`. The client's
 * view already ends the lease early by the safety margin (sentAt + ttl × (1 −
 * margin)), so "local remaining ≥ budget" is "server lease ≥ budget + margin × ttl".
 *
 * Why the lock's own lease and not `handle.remainingMs()`: the latter is the
 * minimum with the session deadline, which the heartbeat pushes forward every
 * ttl/3 and which is never more than ttl × (1 − margin) ahead. With the
 * documented defaults (session 15 s, rail read 8 s) it can never cover the
 * 11 s budget, so nothing would ever be submitted. The session is still
 * checked: `checkStillHeld()` throws once the session deadline has passed.
 */

import { HOP_BUDGETS, HOP_RETRIES, RETRY_DELAY_MAX_MS } from '@dlock/http-client';

export const SUBMIT_CONNECT_TIMEOUT_MS = 1_000;
/** The executor's read timeout exceeds the proxy's rail read timeout by this much. */
export const SUBMIT_READ_SLACK_MS = 2_000;

export function submitReadTimeoutMs(railReadTimeoutMs: number): number {
  return railReadTimeoutMs + SUBMIT_READ_SLACK_MS;
}

/** Worst case of one POST /v1/rail/submissions as the executor waits for it. */
export function submitBudgetMs(railReadTimeoutMs: number): number {
  return SUBMIT_CONNECT_TIMEOUT_MS + submitReadTimeoutMs(railReadTimeoutMs);
}

/** A fenced write (P6, P3) at its worst: every try to its read timeout, the longest wait between. */
function fencedWriteWorstMs(): number {
  const { connectTimeoutMs, readTimeoutMs } = HOP_BUDGETS.fencedWrite;
  const { retries } = HOP_RETRIES.fencedWrite;
  return (retries + 1) * (connectTimeoutMs + readTimeoutMs) + retries * RETRY_DELAY_MAX_MS;
}

/**
 * The longest a payout already at the rail takes to finish after SIGTERM (docs/executor.md,
 * "SIGTERM"): its submit is never aborted, then P6 ACKED and P3 post run to the end.
 * EXECUTOR_SHUTDOWN_GRACE_MS, and a pod's termination grace above it, cover this
 * (docs/operations.md, "Scaling the executors").
 */
export function drainBudgetMs(railReadTimeoutMs: number): number {
  return submitBudgetMs(railReadTimeoutMs) + 2 * fencedWriteWorstMs();
}
