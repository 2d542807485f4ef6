import {
  isLiveRailOutcome,
  type PayoutState,
  type PayoutSummary,
  type PayoutView,
  type RailEvidence,
  type RailOutcome,
} from '@dlock/payout-contract';
import type { AttemptStep } from './attempt-step.types';

/** The proxy's record of a submission as R2 shows it; `outcome` null = unresolved. */
export interface ProxyRecord {
  submissionId: string;
  outcome: RailOutcome | null;
  railReference: string | null;
  presentedToken: bigint;
  /** The proxy's receipt of an ACKED or REJECTED record (docs/rail.md, "Receipts"). */
  railReceipt: string | null;
}

/** What the holder of a fresh token does next with a payout, by its state (docs/payment-resource.md). */
export type NextStep =
  | { step: 'claim' } // PENDING
  | { step: 'reclaim' } // CLAIMED: a dead worker's claim, re-claimed under the new token
  | { step: 'resolve-from-record' } // RAIL_SUBMITTED: read R2 first, then decideFromRecord
  | { step: 'post' } // RAIL_ACKED: money left; R2 gives the receipt P3 is booked on
  | { step: 'leave'; why: 'quarantined' | 'terminal' };

export function nextStepFor(state: PayoutState): NextStep {
  switch (state) {
    case 'PENDING':
      return { step: 'claim' };
    case 'CLAIMED':
      return { step: 'reclaim' };
    case 'RAIL_SUBMITTED':
      return { step: 'resolve-from-record' };
    case 'RAIL_ACKED':
      return { step: 'post' };
    case 'RAIL_AMBIGUOUS':
      // FR-23: no worker, under any token, ever acts on it again.
      return { step: 'leave', why: 'quarantined' };
    case 'POSTED':
    case 'FAILED':
    case 'ABANDONED':
      return { step: 'leave', why: 'terminal' };
  }
}

export type RecordDecision =
  | { action: 'submit' } // no live record: nothing was presented; the proxy's fence + uniqueness guard a race
  | { action: 'record-acked'; record: ProxyRecord } // P6 ACKED, then post
  | { action: 'record-rejected'; record: ProxyRecord } // P6 REJECTED → FAILED
  | { action: 'record-ambiguous'; record: ProxyRecord | null; why: string }; // P6 AMBIGUOUS

/**
 * A RAIL_SUBMITTED payout (or a DUPLICATE_SUBMISSION answer) resolved from the
 * proxy's records. FENCED and WITHDRAWN rows presented nothing to the rail and
 * are ignored.
 * An unresolved row is indistinguishable from a timeout (crash after
 * forwarding): ambiguous, never resubmitted. More than one live row cannot
 * happen with the guards on; if it does, the only safe answer is ambiguous.
 */
export function decideFromRecords(records: readonly ProxyRecord[]): RecordDecision {
  const live = records.filter((r) => isLiveRailOutcome(r.outcome));
  if (live.length === 0) return { action: 'submit' };
  if (live.length > 1)
    return { action: 'record-ambiguous', record: null, why: 'several-live-records' };
  const [record] = live;
  switch (record.outcome) {
    case 'ACKED':
      return { action: 'record-acked', record };
    case 'REJECTED':
      return { action: 'record-rejected', record };
    case 'TIMEOUT':
      return { action: 'record-ambiguous', record, why: 'timeout' };
    case null:
      return { action: 'record-ambiguous', record, why: 'unresolved' };
    case 'FENCED':
    case 'WITHDRAWN':
      throw new Error('unreachable: rows that presented nothing were filtered out');
  }
}

/**
 * The first step of an attempt. A payout polled as PENDING is claimed at once
 * (docs/executor.md's order has no read between acquire and claim): its amount, currency
 * and beneficiary never change, and the claim's expectedState checks the state
 * under the row lock, which is the FR-14 re-read without its race. Any other
 * polled state is read first.
 */
export function firstStep(payout: PayoutSummary): AttemptStep {
  if (payout.state !== 'PENDING') return { to: 'reread' };
  const view: PayoutView = { ...payout, submissionId: null, railReference: null };
  return { to: 'claim', view, expected: 'PENDING', rereadIfMoved: true };
}

/** FR-14: after the re-read the state picks the next conditional write; the write decides. */
export function stepForState(view: PayoutView): AttemptStep {
  const next = nextStepFor(view.state);
  switch (next.step) {
    case 'leave':
      return { to: 'end', result: { kind: 'skipped', reason: next.why } };
    case 'claim':
      return { to: 'claim', view, expected: 'PENDING', rereadIfMoved: false };
    case 'reclaim':
      return { to: 'claim', view, expected: 'CLAIMED', rereadIfMoved: false };
    case 'resolve-from-record':
      return { to: 'resolve-from-record', view };
    case 'post':
      // P3 is booked on the proxy's receipt of the ACK, which R2 carries (docs/rail.md, "Receipts").
      return { to: 'resolve-from-record', view };
  }
}

/**
 * RAIL_SUBMITTED without a recorded outcome, or a DUPLICATE_SUBMISSION
 * answer: the proxy's records (R2) say what happened (docs/payment-resource.md). After a
 * duplicate, no live record is a defect to report, never a reason to submit.
 */
export function stepFromRecords(
  view: PayoutView,
  records: readonly ProxyRecord[],
  afterDuplicate: boolean,
): AttemptStep {
  if (view.state === 'RAIL_ACKED') return postFromRecords(view, records);
  const decision = decideFromRecords(records);
  switch (decision.action) {
    case 'submit':
      // Nothing was presented: RAIL_SUBMITTED is recorded again under this
      // token, which fences the dead holder out here and gives the instruction.
      if (!afterDuplicate) return { to: 'mark-submitted', view };
      return {
        to: 'end',
        result: { kind: 'abandoned', reason: 'duplicate-without-record' },
        alarm: 'DUPLICATE_SUBMISSION but no live record',
      };
    case 'record-acked': {
      const { submissionId, railReference, railReceipt } = decision.record;
      if (railReference === null || railReceipt === null) {
        return { to: 'quarantine', submissionId, why: 'acked-record-without-reference' };
      }
      return { to: 'record-acked', ack: { submissionId, railReference, railReceipt } };
    }
    case 'record-rejected': {
      const { submissionId, railReceipt } = decision.record;
      if (railReceipt === null)
        return { to: 'quarantine', submissionId, why: 'record: rejected-without-receipt' };
      return {
        to: 'record-rejected',
        submissionId,
        why: 'rail declined the transfer',
        railReceipt,
      };
    }
    case 'record-ambiguous':
      return {
        to: 'quarantine',
        submissionId: decision.record?.submissionId,
        why: `record: ${decision.why}`,
      };
  }
}

/**
 * RAIL_ACKED: money left and only the ledger is missing; P3 is booked on a
 * receipt of the submission payment-resource recorded. R2's ACKED record
 * carries one; a payout the reconciler resolved ACKED has a TIMEOUT record,
 * so the rail's record through R3 gives it (docs/rail.md, "Receipts"). It is
 * never submitted, quarantined or failed from here: the table allows POST only.
 */
function postFromRecords(view: PayoutView, records: readonly ProxyRecord[]): AttemptStep {
  const recorded = view.submissionId?.toLowerCase();
  const acked = records.find(
    (r) => r.outcome === 'ACKED' && r.submissionId.toLowerCase() === recorded,
  );
  if (acked?.railReference && acked.railReceipt) {
    const { submissionId, railReference, railReceipt } = acked;
    return { to: 'post', ack: { submissionId, railReference, railReceipt } };
  }
  return { to: 'post-from-evidence', view };
}

/** RAIL_ACKED after R3: post on the rail's record of the reference P6 or P8 recorded, or leave it. */
export function stepFromEvidence(view: PayoutView, evidence: RailEvidence): AttemptStep {
  const { submissionId, railReference } = view;
  const [transfer, ...more] = evidence.lookup.transfers;
  const booked = more.length === 0 && transfer?.railReference === railReference;
  if (evidence.railReceipt === null || !booked || submissionId === null || railReference === null) {
    return {
      to: 'end',
      result: { kind: 'abandoned', reason: 'acked-without-receipt' },
      alarm: 'RAIL_ACKED payout without a receipted rail record: an operator must read it',
    };
  }
  return { to: 'post', ack: { submissionId, railReference, railReceipt: evidence.railReceipt } };
}
