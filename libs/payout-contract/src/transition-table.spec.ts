import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  IN_FLIGHT_PAYOUT_STATES,
  IN_FLIGHT_PAYOUT_STATES_SQL,
  PAYOUT_STATES,
  TERMINAL_PAYOUT_STATES,
  TERMINAL_PAYOUT_STATES_SQL,
  isTerminalPayoutState,
  type PayoutState,
} from './payout-types';
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

  it('the terminal states are exactly those no event leaves', () => {
    const left = (s: PayoutState) => PAYOUT_EVENTS.some((e) => transition(s, e).allowed);
    expect(PAYOUT_STATES.filter((s) => !left(s))).toEqual([...TERMINAL_PAYOUT_STATES]);
    expect(PAYOUT_STATES.filter(isTerminalPayoutState)).toEqual([...TERMINAL_PAYOUT_STATES]);
  });

  it("their SQL list is the predicate of paydb's sweep index, so the sweep's query can use it", () => {
    const migration = path.join(
      __dirname,
      '../../../migrations/paydb/1796140800000-sweep-index.ts',
    );
    expect(TERMINAL_PAYOUT_STATES_SQL).toBe("('POSTED', 'FAILED', 'ABANDONED')");
    expect(readFileSync(migration, 'utf8')).toContain(
      `WHERE state IN ${TERMINAL_PAYOUT_STATES_SQL}`,
    );
  });

  it('the in-flight states are those a claim reaches that an event still leaves', () => {
    const claimed = new Set(
      listedTransitions()
        .filter((t) => t.from !== 'PENDING')
        .map((t) => t.from),
    );
    expect([...IN_FLIGHT_PAYOUT_STATES]).toEqual(PAYOUT_STATES.filter((s) => claimed.has(s)));
    expect(IN_FLIGHT_PAYOUT_STATES_SQL).toBe(
      "('CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED', 'RAIL_AMBIGUOUS')",
    );
  });

  it('only P8 and P7-after-SLA leave RAIL_AMBIGUOUS', () => {
    const leaving = PAYOUT_EVENTS.filter((e) => transition('RAIL_AMBIGUOUS', e).allowed);
    expect(leaving).toEqual(['RESOLVE_ACKED', 'RESOLVE_NOT_FOUND', 'ABANDON_AFTER_SLA']);
  });
});
