import assert from 'node:assert/strict';
import { FENCING_TOKEN_MAX } from '@dlock/lock-api';

// Budgets and retries of every hop live in @dlock/http-client (HOP_BUDGETS, HOP_RETRIES).

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
