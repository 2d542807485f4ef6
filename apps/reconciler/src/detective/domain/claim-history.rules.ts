import {
  PAYOUT_EVENTS,
  PAYOUT_STATES,
  transition,
  type PayoutEvent,
  type PayoutState,
} from '@dlock/payout-contract';

/** One row of a payout's transition log, as the check reads it. */
export interface LoggedTransition {
  transitionId: string;
  fromState: string;
  toState: string;
  event: string;
  /** Its place in the payout's audit chain: 1, 2, 3, … with no gap (docs/audit.md). */
  chainSeq: string;
}

/** How a claim history can be inconsistent (docs/reconciler.md, `claim_history_consistent`). */
export type HistoryBreak =
  | 'version_gap' // chain_seq is not the next one
  | 'wrong_from_state' // the transition starts elsewhere than where the one before ended
  | 'not_in_state_machine' // the transition table has no such (state, event) -> state
  | 'state_differs'; // the payout is not in the state its log ends in

export interface HistoryVerdict {
  problem: HistoryBreak;
  /** The first transition that breaks the history; null for `state_differs`. */
  transitionId: string | null;
  expected: string;
  found: string;
}

const isState = (s: string): s is PayoutState => (PAYOUT_STATES as readonly string[]).includes(s);
const isEvent = (e: string): e is PayoutEvent => (PAYOUT_EVENTS as readonly string[]).includes(e);

/**
 * INV-01's history half: a payout's transitions, in log order, are a path of
 * the one transition table (`transition` of @dlock/payout-contract, which
 * payment-resource decides with) from PENDING, numbered 1, 2, 3, … without a
 * gap, ending in the payout's state. The first break, or null. Pure.
 */
export function judgeClaimHistory(
  log: readonly LoggedTransition[],
  payoutState: string,
): HistoryVerdict | null {
  let state = 'PENDING';
  for (const [i, t] of log.entries()) {
    const at = { transitionId: t.transitionId };
    if (t.chainSeq !== String(i + 1)) {
      return { problem: 'version_gap', ...at, expected: String(i + 1), found: t.chainSeq };
    }
    if (t.fromState !== state) {
      return { problem: 'wrong_from_state', ...at, expected: state, found: t.fromState };
    }
    const step = isState(t.fromState) && isEvent(t.event) ? transition(t.fromState, t.event) : null;
    if (step === null || !step.allowed || step.to !== t.toState) {
      return {
        problem: 'not_in_state_machine',
        ...at,
        expected: step?.allowed ? `${t.event} -> ${step.to}` : `no ${t.event} from ${t.fromState}`,
        found: `${t.fromState} -${t.event}-> ${t.toState}`,
      };
    }
    state = t.toState;
  }
  if (log.length > 0 && payoutState !== state) {
    return { problem: 'state_differs', transitionId: null, expected: state, found: payoutState };
  }
  return null;
}
