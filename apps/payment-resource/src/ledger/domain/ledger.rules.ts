import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

export type Direction = 'DEBIT' | 'CREDIT';

/** One leg of a movement; the sign of `amountMinor` carries the direction (docs/payment-resource.md). */
export interface Leg {
  accountId: string;
  counterpartyAccountId: string;
  amountMinor: number;
}

/**
 * The two legs of one movement: debit `from`, credit `to`. Every group the
 * service writes comes from here, so "every group sums to zero" (INV-03) is
 * asserted at the one place groups are made (the database re-checks at commit).
 */
export function balancedPair(from: string, to: string, amountMinor: number): [Leg, Leg] {
  assert.ok(Number.isSafeInteger(amountMinor) && amountMinor > 0, 'amount must be positive');
  assert.notEqual(from, to, 'a movement needs two different accounts');
  const legs: [Leg, Leg] = [
    { accountId: from, counterpartyAccountId: to, amountMinor: -amountMinor },
    { accountId: to, counterpartyAccountId: from, amountMinor },
  ];
  assert.equal(legs[0].amountMinor + legs[1].amountMinor, 0, 'INV-03: group must sum to zero');
  return legs;
}

export function directionOf(signedAmountMinor: number): Direction {
  return signedAmountMinor < 0 ? 'DEBIT' : 'CREDIT';
}

/** System accounts per currency: the credit leg of payouts and the source of opening balances. */
export function clearingAccountId(currency: string): string {
  return `clearing-${currency}`;
}

/** Upper bound of PAYMENT_CLEARING_SHARDS; shard suffixes are two digits. */
export const CLEARING_SHARDS_MAX = 64;

/**
 * The clearing account that takes the credit leg of one payout. With one
 * shard it is `clearing-<CUR>`. With N > 1 the credit legs are spread over
 * `clearing-<CUR>-00` … `-<N-1>` by a hash of the payout id, so postings of
 * different customer accounts stop queueing on one balance row lock. The
 * choice is stable for a payout; the currency's clearing total is the sum of
 * its CLEARING accounts, and each of them keeps balance = ledger sum.
 */
export function clearingAccountFor(currency: string, payoutId: string, shards: number): string {
  assert.ok(
    Number.isInteger(shards) && shards >= 1 && shards <= CLEARING_SHARDS_MAX,
    `clearing shards must be 1..${CLEARING_SHARDS_MAX}`,
  );
  if (shards === 1) return clearingAccountId(currency);
  const hash = createHash('sha256').update(payoutId.toLowerCase()).digest().readUInt32BE(0);
  return `${clearingAccountId(currency)}-${String(hash % shards).padStart(2, '0')}`;
}

export function fundingAccountId(currency: string): string {
  return `funding-${currency}`;
}
