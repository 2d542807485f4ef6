import assert from 'node:assert/strict';
import { FENCING_TOKEN_MAX } from '@dlock/lock-api';

/**
 * Facts of the payout protocol that more than one service must agree on.
 * Each is defined here once; a service that restates one drifts (an account id
 * one service accepts and another refuses cycles forever).
 */

/** An account id: the `{accountId}` of the lock key `payout:{accountId}`. */
export const ACCOUNT_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const ACCOUNT_ID_RULE = '1..64 of [A-Za-z0-9._-]';

export function isAccountId(value: unknown): value is string {
  return typeof value === 'string' && ACCOUNT_ID_PATTERN.test(value);
}

/** Every writer of an account's payouts holds this lock: executors and the reconciler alike. */
export const PAYOUT_LOCK_KEY_PREFIX = 'payout:';

export function payoutLockKey(accountId: string): string {
  return `${PAYOUT_LOCK_KEY_PREFIX}${accountId}`;
}

/** The account a lock key guards, when it is a payout key `payout:{accountId}`; else null. */
export function payoutAccountOf(key: string): string | null {
  if (!key.startsWith(PAYOUT_LOCK_KEY_PREFIX)) return null;
  const accountId = key.slice(PAYOUT_LOCK_KEY_PREFIX.length);
  return isAccountId(accountId) ? accountId : null;
}

/**
 * The payout's X-Idempotency-Key: derived from its id, never regenerated, and
 * shared by every writer of the payout (claim, outcomes, post, submission,
 * resolve). Idempotency is scoped by token too, so a later holder re-sending
 * under its own token is a new request, not a replay (docs/contract.md).
 */
export function idempotencyKeyFor(payoutId: string): string {
  return `payout-${payoutId.toLowerCase()}`;
}

/**
 * The client reference the rail sees for a payout: derived from the payout id
 * and nothing else, so the reconciler's lookup finds every transfer the proxy
 * ever booked for it (docs/payment-resource.md). Lower-cased because uuids arrive in either case.
 */
export function railClientRef(payoutId: string): string {
  return `po-${payoutId.toLowerCase()}`;
}

/**
 * Programming-error guard of every protected call: the token is the grant's
 * bigint, present and in range. A missing token is a defect in the caller,
 * so this throws (AssertionError) before any byte is sent; it never warns.
 */
/** A fence credential whose token is real and whose proof is there (the guard checks it). */
export function assertFence(fence: { token: unknown; proof: unknown }): void {
  assertToken(fence.token);
  assert.ok(
    typeof fence.proof === 'string' && fence.proof !== '',
    'a grant proof is required on every protected call (handle.fence)',
  );
}

export function assertToken(token: unknown): asserts token is bigint {
  assert.ok(
    typeof token === 'bigint',
    'a fencing token (bigint) is required on every protected call',
  );
  assert.ok(token > 0n && token <= FENCING_TOKEN_MAX, 'the fencing token must be a positive int64');
}
