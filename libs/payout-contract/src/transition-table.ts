import { PAYOUT_STATES, type PayoutState } from './payout-types';

/**
 * Every event that can be applied to a payout (docs/payment-resource.md, docs/contract.md). The
 * endpoint that raises each one is in docs/payment-resource.md.
 */
export const PAYOUT_EVENTS = [
  'CLAIM', // P2 with sufficient funds (from PENDING) or a recovery re-claim (from CLAIMED)
  'CLAIM_INSUFFICIENT_FUNDS', // P2 when the funds check fails
  'RAIL_SUBMITTED', // P6 outcome=SUBMITTED, before the proxy call (again by a later holder: recovery)
  'RAIL_ACKED', // P6 outcome=ACKED
  'RAIL_REJECTED', // P6 outcome=REJECTED
  'RAIL_AMBIGUOUS', // P6 outcome=AMBIGUOUS
  'POST', // P3: the ledger posting of an acked payout
  'RESOLVE_ACKED', // P8 resolution=ACKED (reconciler, rail evidence)
  'RESOLVE_NOT_FOUND', // P8 resolution=NOT_FOUND (reconciler, rail evidence)
  'ABANDON', // P7 on a payout nothing has touched yet
  'ABANDON_AFTER_SLA', // P7 on an ambiguous payout once the resolution SLA has passed
] as const;
export type PayoutEvent = (typeof PAYOUT_EVENTS)[number];

type Row = Readonly<Partial<Record<PayoutEvent, PayoutState>>>;

/**
 * The payout state machine as one explicit, total table (INV-08): a pair that
 * is not listed here is rejected. Terminal states list nothing. Only P8 and
 * P7-after-SLA leave RAIL_AMBIGUOUS. There is deliberately no edge from
 * CLAIMED straight to a rail outcome: a holder resolving from the proxy's
 * record first records RAIL_SUBMITTED, so no outcome is ever written for a
 * payout whose submission was never recorded.
 */
export const TRANSITIONS: Readonly<Record<PayoutState, Row>> = {
  PENDING: { CLAIM: 'CLAIMED', CLAIM_INSUFFICIENT_FUNDS: 'FAILED', ABANDON: 'ABANDONED' },
  CLAIMED: { CLAIM: 'CLAIMED', RAIL_SUBMITTED: 'RAIL_SUBMITTED' },
  RAIL_SUBMITTED: {
    // A later holder that finds nothing presented records its intent again under its own token,
    // which fences the earlier holder out here and gives it the instruction to submit on.
    RAIL_SUBMITTED: 'RAIL_SUBMITTED',
    RAIL_ACKED: 'RAIL_ACKED',
    RAIL_REJECTED: 'FAILED',
    RAIL_AMBIGUOUS: 'RAIL_AMBIGUOUS',
  },
  RAIL_ACKED: { POST: 'POSTED' },
  RAIL_AMBIGUOUS: {
    RESOLVE_ACKED: 'RAIL_ACKED',
    RESOLVE_NOT_FOUND: 'FAILED',
    ABANDON_AFTER_SLA: 'ABANDONED',
  },
  POSTED: {},
  FAILED: {},
  ABANDONED: {},
};

export type TransitionDecision =
  | { allowed: true; from: PayoutState; to: PayoutState; event: PayoutEvent }
  | { allowed: false; from: PayoutState; event: PayoutEvent };

/** The only function that decides a payout's next state. Pure. */
export function transition(from: PayoutState, event: PayoutEvent): TransitionDecision {
  const to = TRANSITIONS[from][event];
  return to === undefined ? { allowed: false, from, event } : { allowed: true, from, to, event };
}

/** Every (state, event) pair the table lists, for tests and docs. */
export function listedTransitions(): { from: PayoutState; event: PayoutEvent; to: PayoutState }[] {
  return PAYOUT_STATES.flatMap((from) =>
    PAYOUT_EVENTS.flatMap((event) => {
      const to = TRANSITIONS[from][event];
      return to === undefined ? [] : [{ from, event, to }];
    }),
  );
}
