import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DlockError, FENCING_TOKEN_MAX } from '@dlock/lock-api';
import { HopUnavailableError, type HopBudget } from './json-hop';

/**
 * The executor's per-hop budgets (C3 §3.8). Fixed contract numbers, except
 * the submit's read timeout, which follows the rail's (RAIL_READ_TIMEOUT_MS).
 */
export const HOP_BUDGETS = Object.freeze({
  /** P2, P3 and P6: conditional fenced writes. */
  fencedWrite: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 3_000 }),
  /** P1, P4, R2: advisory reads. */
  advisoryRead: Object.freeze({ connectTimeoutMs: 300, readTimeoutMs: 1_000 }),
}) satisfies Record<string, HopBudget>;

/** Fenced writes: one retry, only when nothing can have happened twice (503 or no connection). */
export const FENCED_WRITE_RETRIES = 1;
/** Advisory reads: two retries on any transient failure. */
export const ADVISORY_READ_RETRIES = 2;
const RETRY_DELAY_MS = 100;
const RETRY_DELAY_MAX_MS = 1_000;

/**
 * Programming-error guard of every protected call: the token is the grant's
 * bigint, present and in range. A missing token is a defect in the caller,
 * so this throws (AssertionError) before any byte is sent; it never warns.
 */
export function assertToken(token: unknown): asserts token is bigint {
  assert.ok(
    typeof token === 'bigint',
    'a fencing token (bigint) is required on every protected call',
  );
  assert.ok(token > 0n && token <= FENCING_TOKEN_MAX, 'the fencing token must be a positive int64');
}

/** The payout's stable idempotency key (C3 §3.1): derived from its id, never regenerated. */
export function idempotencyKeyFor(payoutId: string): string {
  return `payout-${payoutId.toLowerCase()}`;
}

/** 503 or a connection that was never made: nothing happened at the peer. */
export function nothingHappened(err: unknown): boolean {
  if (err instanceof HopUnavailableError) return err.phase === 'connect';
  return err instanceof DlockError && err.httpStatus === 503;
}

/** Transient for an advisory read: any transport failure or a 503. */
function transientRead(err: unknown): boolean {
  return (
    err instanceof HopUnavailableError || (err instanceof DlockError && err.httpStatus === 503)
  );
}

async function withRetries<T>(
  retries: number,
  retryable: (err: unknown) => boolean,
  fn: () => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      // Any 409 (FENCED_OUT, PAYOUT_NOT_CLAIMABLE…) means the world moved on: never retried.
      if (attempt >= retries || !retryable(err)) throw err;
      const after = err instanceof DlockError ? err.retryAfterMillis : undefined;
      await sleep(Math.min(RETRY_DELAY_MAX_MS, after ?? RETRY_DELAY_MS));
    }
  }
}

export function fencedWrite<T>(fn: () => Promise<T>): Promise<T> {
  return withRetries(FENCED_WRITE_RETRIES, nothingHappened, fn);
}

export function advisoryRead<T>(fn: () => Promise<T>): Promise<T> {
  return withRetries(ADVISORY_READ_RETRIES, transientRead, fn);
}
