import type { RailLookup, RailTransfer } from '@dlock/payout-contract';

/** What the reconciler knows of one RAIL_AMBIGUOUS payout before it looks at the rail. */
export interface AmbiguousPayout {
  payoutId: string;
  accountId: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  /**
   * When the rail attempt was last known to be in flight: the latest of the
   * payout's submitted and ambiguous stamps (ambiguity is recorded only after
   * the proxy gave up, so any transfer it caused exists by then).
   */
  attemptEndedAt: Date;
}

export type Verdict =
  /** Exactly one settled transfer that matches the payout: P8 ACKED, then post. */
  | { kind: 'acked'; transfer: RailTransfer }
  /** Nothing booked, and the settlement window after the attempt has passed: P8 NOT_FOUND. */
  | { kind: 'not_found'; windowMs: number; sinceAttemptMs: number }
  /** Two or more transfers: money may have moved twice. A human decides; never automated. */
  | { kind: 'duplicate'; transfers: RailTransfer[] }
  /** One transfer whose amount, currency or reference disagrees with the payout: a human decides. */
  | { kind: 'mismatch'; transfer: RailTransfer; reason: string }
  /** Not enough evidence yet: look again next pass. */
  | { kind: 'wait'; reason: 'transfer_unsettled' | 'settlement_window_open' };

/**
 * Classifies the rail's answer (docs/payment-resource.md, docs/rail.md). Pure. Time alone is never
 * evidence of payment; absence counts only once the longer of our window and
 * the rail's own has passed since the attempt ended.
 */
export function classify(
  payout: AmbiguousPayout,
  lookup: RailLookup,
  now: Date,
  settlementWindowMs: number,
): Verdict {
  const transfers = lookup.transfers;
  if (transfers.length >= 2) return { kind: 'duplicate', transfers: [...transfers] };
  if (transfers.length === 1) {
    const transfer = transfers[0];
    const reason = mismatch(payout, transfer);
    if (reason !== null) return { kind: 'mismatch', transfer, reason };
    if (!transfer.settled) return { kind: 'wait', reason: 'transfer_unsettled' };
    return { kind: 'acked', transfer };
  }
  const windowMs = Math.max(settlementWindowMs, lookup.settlementWindowMs ?? 0);
  const sinceAttemptMs = now.getTime() - payout.attemptEndedAt.getTime();
  if (sinceAttemptMs >= windowMs) return { kind: 'not_found', windowMs, sinceAttemptMs };
  return { kind: 'wait', reason: 'settlement_window_open' };
}

function mismatch(payout: AmbiguousPayout, t: RailTransfer): string | null {
  if (t.clientRef !== payout.clientRef) return `clientRef ${t.clientRef} != ${payout.clientRef}`;
  if (t.amountMinor !== payout.amountMinor)
    return `amount ${t.amountMinor} != ${payout.amountMinor}`;
  if (t.currency !== payout.currency) return `currency ${t.currency} != ${payout.currency}`;
  return null;
}

/** The latest instant among the payout's stamps (falls back to its creation). */
export function attemptEndedAt(stamps: (string | null)[], createdAt: string): Date {
  let latest = Date.parse(createdAt);
  for (const s of stamps) {
    if (s !== null) latest = Math.max(latest, Date.parse(s));
  }
  return new Date(latest);
}

/** The P8 `evidence` text: what the rail said, compact and attributable (<= 1024 chars). */
export function evidenceText(verdict: Verdict, lookup: RailLookup): string {
  let text: string;
  switch (verdict.kind) {
    case 'acked':
      text =
        `rail lookup ${lookup.asOf}: clientRef=${lookup.clientRef} has exactly one settled transfer ` +
        `railReference=${verdict.transfer.railReference} acceptedAt=${verdict.transfer.acceptedAt} ` +
        `settledAt=${verdict.transfer.settledAt ?? 'unknown'}`;
      break;
    case 'not_found':
      text =
        `rail lookup ${lookup.asOf}: clientRef=${lookup.clientRef} has no transfer ` +
        `${verdict.sinceAttemptMs} ms after the attempt ended (settlement window ${verdict.windowMs} ms)`;
      break;
    case 'duplicate':
    case 'mismatch':
    case 'wait':
      text = `rail lookup ${lookup.asOf}: ${verdict.kind}`;
      break;
  }
  return text.slice(0, 1024);
}
