import { ContentionError, DlockError } from '@dlock/lock-api';
import { abortReason } from './clock';
import { LockServerUnavailableError } from './errors';

/**
 * The acquire retry budget (docs/contract.md, FR-28; docs/contract.md, "Retry counts" counts retries): one attempt
 * and up to 5 retries (6 attempts), full-jitter exponential backoff from 50 ms, each wait
 * capped at 1 s, so the caps run 50, 100, 200, 400, 800 ms. Fixed on purpose: an unbounded
 * or tunable loop is how a contended key becomes a storm.
 */
export const ACQUIRE_RETRY_BUDGET = Object.freeze({
  retriesMax: 5,
  attemptsMax: 6,
  baseDelayMs: 50,
  maxDelayMs: 1_000,
});

export type RetryVerdict = 'contended' | 'transient' | 'final';

/**
 * Which acquire failures are worth another attempt. Contention (409, 429) and
 * "nothing was touched" failures (503 NOT_LEADER, no connection made) retry;
 * everything else — a session error, a validation error, a read timeout whose
 * outcome is unknown, and above all FENCED_OUT — is final.
 */
export function classifyAcquireFailure(err: unknown): RetryVerdict {
  if (err instanceof LockServerUnavailableError)
    return err.phase === 'connect' ? 'transient' : 'final';
  if (!(err instanceof DlockError)) return 'final';
  switch (err.code) {
    case 'LOCK_CONTENDED':
    case 'CONTENTION_EXCEEDED':
      return 'contended';
    case 'NOT_LEADER':
      return 'transient';
    default:
      return 'final';
  }
}

/**
 * Full jitter: uniform in [0, min(cap, base · 2^retryIndex)). `retryIndex` 0 is
 * the wait after the first failed attempt. A server's `retryAfterMillis` is a
 * floor: waiting less is what got the caller throttled.
 */
export function backoffDelayMs(
  retryIndex: number,
  random: () => number,
  retryAfterMillis?: number,
): number {
  const { baseDelayMs, maxDelayMs } = ACQUIRE_RETRY_BUDGET;
  const ceilingMs = Math.min(maxDelayMs, baseDelayMs * 2 ** retryIndex);
  const r = Math.min(Math.max(random(), 0), 1);
  const jitteredMs = Math.floor(r * ceilingMs);
  return Math.max(jitteredMs, retryAfterMillis ?? 0);
}

export interface RetryDeps {
  random: () => number;
  /** Resolves after `ms`, rejects with the abort reason if `signal` aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  signal?: AbortSignal;
}

/**
 * Runs `attempt` under the budget. Returns the first success; rethrows a
 * final failure at once; after the last attempt throws ContentionError when
 * the key stayed contended, or the last transient failure otherwise (a dead
 * lock-server is not contention).
 */
export async function retryAcquire<T>(
  attempt: (attemptIndex: number) => Promise<T>,
  deps: RetryDeps,
): Promise<T> {
  let last: unknown;
  for (let i = 0; i < ACQUIRE_RETRY_BUDGET.attemptsMax; i++) {
    if (deps.signal?.aborted) throw abortReason(deps.signal);
    if (i > 0) {
      const retryAfter = last instanceof DlockError ? last.retryAfterMillis : undefined;
      await deps.sleep(backoffDelayMs(i - 1, deps.random, retryAfter), deps.signal);
    }
    try {
      return await attempt(i);
    } catch (err) {
      if (classifyAcquireFailure(err) === 'final') throw err;
      last = err;
    }
  }
  if (classifyAcquireFailure(last) === 'contended') {
    const source = last as DlockError;
    throw new ContentionError(
      `lock still contended after ${ACQUIRE_RETRY_BUDGET.attemptsMax} attempts`,
      {
        details: { ...source.details, attempts: ACQUIRE_RETRY_BUDGET.attemptsMax },
        retryAfterMillis: source.retryAfterMillis,
        cause: source,
      },
    );
  }
  throw last;
}
