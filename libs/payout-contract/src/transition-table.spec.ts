import { PAYOUT_STATES, TERMINAL_PAYOUT_STATES } from './payout-types';
import { PAYOUT_EVENTS, transition, listedTransitions } from './transition-table';

// The expected machine, written out independently of the module (docs/payment-resource.md + docs/contract.md).
const EXPECTED: Record<string, string> = {
  'PENDING CLAIM': 'CLAIMED',
  'PENDING CLAIM_INSUFFICIENT_FUNDS': 'FAILED',
  'PENDING ABANDON': 'ABANDONED',
  'CLAIMED CLAIM': 'CLAIMED',
  'CLAIMED RAIL_SUBMITTED': 'RAIL_SUBMITTED',
  'RAIL_SUBMITTED RAIL_SUBMITTED': 'RAIL_SUBMITTED',
  'RAIL_SUBMITTED RAIL_ACKED': 'RAIL_ACKED',
  'RAIL_SUBMITTED RAIL_REJECTED': 'FAILED',
  'RAIL_SUBMITTED RAIL_AMBIGUOUS': 'RAIL_AMBIGUOUS',
  'RAIL_ACKED POST': 'POSTED',
  'RAIL_AMBIGUOUS RESOLVE_ACKED': 'RAIL_ACKED',
  'RAIL_AMBIGUOUS RESOLVE_NOT_FOUND': 'FAILED',
  'RAIL_AMBIGUOUS ABANDON_AFTER_SLA': 'ABANDONED',
};

describe('payout transition table', () => {
  const pairs = PAYOUT_STATES.flatMap((s) => PAYOUT_EVENTS.map((e) => [s, e] as const));

  it('covers all 8 x 11 pairs', () => {
    expect(pairs).toHaveLength(88);
  });

  it.each(pairs)('%s + %s', (state, event) => {
    const expected = EXPECTED[`${state} ${event}`];
    const result = transition(state, event);
    if (expected === undefined) {
      expect(result).toEqual({ allowed: false, from: state, event });
    } else {
      expect(result).toEqual({ allowed: true, from: state, to: expected, event });
    }
  });

  it('lists exactly the expected transitions', () => {
    expect(listedTransitions().map((t) => `${t.from} ${t.event} -> ${t.to}`)).toEqual(
      Object.entries(EXPECTED).map(([k, v]) => `${k} -> ${v}`),
    );
  });

  it('terminal states accept nothing', () => {
    for (const state of TERMINAL_PAYOUT_STATES) {
      for (const event of PAYOUT_EVENTS) expect(transition(state, event).allowed).toBe(false);
    }
  });

  it('only P8 and P7-after-SLA leave RAIL_AMBIGUOUS', () => {
    const leaving = PAYOUT_EVENTS.filter((e) => transition('RAIL_AMBIGUOUS', e).allowed);
    expect(leaving).toEqual(['RESOLVE_ACKED', 'RESOLVE_NOT_FOUND', 'ABANDON_AFTER_SLA']);
  });
});
