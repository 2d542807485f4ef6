import { isLiveRailOutcome, type RailLookup, type ReceiptOutcome } from '@dlock/payout-contract';
import type { SubmissionRecord } from './submission.types';

/** What a rail record earns: a receipt for this submission (or none admitted), or nothing. */
export type EvidenceVerdict =
  | {
      receipt: true;
      submission: SubmissionRecord | null;
      out: ReceiptOutcome;
      ref: string | null;
      atMs: number;
    }
  | { receipt: false; why: string };

/**
 * The receipt a rail lookup earns (docs/rail.md, "Receipts"), decided from the
 * rail's record and this proxy's own: NOT_FOUND when the rail has no transfer
 * under the payout's client reference; ACKED when it has exactly one, settled,
 * that is the one live submission's amount and currency. Anything else (two
 * transfers, one unsettled or different, two live submissions) earns none: a
 * person reads it. When NOT_FOUND is final is the reconciler's call (its
 * settlement window), not this function's.
 */
export function evidenceOf(
  lookup: RailLookup,
  records: readonly SubmissionRecord[],
): EvidenceVerdict {
  const live = records.filter((r) => isLiveRailOutcome(r.outcome));
  const atMs = Date.parse(lookup.asOf);
  if (!Number.isSafeInteger(atMs)) return { receipt: false, why: 'lookup-without-time' };
  if (live.length > 1) return { receipt: false, why: 'several-live-submissions' };
  const submission = live[0] ?? null;
  const transfers = lookup.transfers;
  if (transfers.length === 0)
    return { receipt: true, submission, out: 'NOT_FOUND', ref: null, atMs };
  if (transfers.length > 1) return { receipt: false, why: 'several-transfers' };
  const [t] = transfers;
  if (submission === null) return { receipt: false, why: 'transfer-without-submission' };
  if (!t.settled) return { receipt: false, why: 'transfer-unsettled' };
  const same =
    t.clientRef === submission.clientRef &&
    t.amountMinor === submission.amountMinor &&
    t.currency === submission.currency;
  if (!same) return { receipt: false, why: 'transfer-differs' };
  return { receipt: true, submission, out: 'ACKED', ref: t.railReference, atMs };
}
