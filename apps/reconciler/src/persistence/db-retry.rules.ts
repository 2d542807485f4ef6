import { setTimeout as delay } from 'node:timers/promises';

/**
 * docs/contract.md, "Retry counts" gives the reconciler 3 retries on both databases: 4 tries of each statement
 * (RECONCILER_DB_TRIES counts tries, docs/reconciler.md).
 */
export const DB_RETRIES_DEFAULT = 3;
export const DB_TRIES_DEFAULT = DB_RETRIES_DEFAULT + 1;

/** Pause before try n+1 (n >= 1): short, linear, bounded by the try count. */
export function retryDelayMs(attempt: number): number {
  return Math.min(1_000, 200 * attempt);
}

/**
 * The reconciler's one retry layer for database work (docs/contract.md: reconciler ->
 * both databases, 3 retries = 4 tries by default). Every statement the reconciler runs is a read in a
 * read-only session, so re-running it after any failure is safe.
 */
export async function withDbRetries<T>(
  tries: number,
  fn: (attempt: number) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  let last: unknown;
  for (let attempt = 1; attempt <= tries; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      last = err;
      if (attempt === tries || signal?.aborted) break;
      await delay(retryDelayMs(attempt), undefined, { signal }).catch(() => undefined);
    }
  }
  throw last;
}
