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

/**
 * The client reference the rail sees for a payout: derived from the payout id
 * and nothing else, so the reconciler's lookup finds every transfer the proxy
 * ever booked for it (02 §2.2). Lower-cased because uuids arrive in either case.
 */
export function railClientRef(payoutId: string): string {
  return `po-${payoutId.toLowerCase()}`;
}
