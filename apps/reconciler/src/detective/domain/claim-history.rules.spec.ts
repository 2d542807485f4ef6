import { listedTransitions } from '@dlock/payout-contract';
import { judgeClaimHistory, type LoggedTransition } from './claim-history.rules';

/** A log from (from, event, to) steps, numbered as the audit chain numbers it. */
function log(...steps: [string, string, string][]): LoggedTransition[] {
  return steps.map(([fromState, event, toState], i) => ({
    transitionId: String(100 + i),
    fromState,
    toState,
    event,
    chainSeq: String(i + 1),
  }));
}

const POSTED_PATH: [string, string, string][] = [
  ['PENDING', 'CLAIM', 'CLAIMED'],
  ['CLAIMED', 'RAIL_SUBMITTED', 'RAIL_SUBMITTED'],
  ['RAIL_SUBMITTED', 'RAIL_AMBIGUOUS', 'RAIL_AMBIGUOUS'],
  ['RAIL_AMBIGUOUS', 'RESOLVE_ACKED', 'RAIL_ACKED'],
  ['RAIL_ACKED', 'POST', 'POSTED'],
];

describe('judgeClaimHistory (INV-01, a consistent claim history)', () => {
  it('accepts every path of the transition table, recovery self-edges included', () => {
    expect(judgeClaimHistory(log(...POSTED_PATH), 'POSTED')).toBeNull();
    const recovered = log(
      ['PENDING', 'CLAIM', 'CLAIMED'],
      ['CLAIMED', 'CLAIM', 'CLAIMED'],
      ['CLAIMED', 'RAIL_SUBMITTED', 'RAIL_SUBMITTED'],
      ['RAIL_SUBMITTED', 'RAIL_SUBMITTED', 'RAIL_SUBMITTED'],
      ['RAIL_SUBMITTED', 'RAIL_REJECTED', 'FAILED'],
    );
    expect(judgeClaimHistory(recovered, 'FAILED')).toBeNull();
    expect(judgeClaimHistory([], 'PENDING')).toBeNull();
    // Each edge the table lists is accepted where it starts (a one-step log from PENDING).
    for (const { from, event, to } of listedTransitions().filter((t) => t.from === 'PENDING')) {
      expect(judgeClaimHistory(log([from, event, to]), to)).toBeNull();
    }
  });

  it('a skipped state is a transition the table does not list', () => {
    const skipped = log(['PENDING', 'CLAIM', 'CLAIMED'], ['CLAIMED', 'RAIL_ACKED', 'RAIL_ACKED']);
    expect(judgeClaimHistory(skipped, 'RAIL_ACKED')).toEqual({
      problem: 'not_in_state_machine',
      transitionId: '101',
      expected: 'no RAIL_ACKED from CLAIMED',
      found: 'CLAIMED -RAIL_ACKED-> RAIL_ACKED',
    });
    // A listed event that lands elsewhere than the table says, and an unknown event or state.
    expect(judgeClaimHistory(log(['PENDING', 'CLAIM', 'POSTED']), 'POSTED')).toMatchObject({
      problem: 'not_in_state_machine',
      expected: 'CLAIM -> CLAIMED',
    });
    expect(judgeClaimHistory(log(['PENDING', 'TELEPORT', 'POSTED']), 'POSTED')?.problem).toBe(
      'not_in_state_machine',
    );
    expect(judgeClaimHistory(log(['LIMBO', 'CLAIM', 'CLAIMED']), 'CLAIMED')?.problem).toBe(
      'wrong_from_state',
    );
  });

  it('a transition from a state the payout was not in', () => {
    const jumped = log(['PENDING', 'CLAIM', 'CLAIMED'], ['RAIL_ACKED', 'POST', 'POSTED']);
    expect(judgeClaimHistory(jumped, 'POSTED')).toEqual({
      problem: 'wrong_from_state',
      transitionId: '101',
      expected: 'CLAIMED',
      found: 'RAIL_ACKED',
    });
    // Not starting at PENDING is the same break on the first row.
    expect(judgeClaimHistory(log(['CLAIMED', 'CLAIM', 'CLAIMED']), 'CLAIMED')).toMatchObject({
      problem: 'wrong_from_state',
      transitionId: '100',
      expected: 'PENDING',
    });
  });

  it('a version gap, a repeated version, and a payout not where its log ends', () => {
    const gap = log(...POSTED_PATH);
    gap[2] = { ...gap[2], chainSeq: '4' };
    expect(judgeClaimHistory(gap, 'POSTED')).toEqual({
      problem: 'version_gap',
      transitionId: '102',
      expected: '3',
      found: '4',
    });
    const repeated = log(...POSTED_PATH);
    repeated[1] = { ...repeated[1], chainSeq: '1' };
    expect(judgeClaimHistory(repeated, 'POSTED')?.problem).toBe('version_gap');
    expect(judgeClaimHistory(log(...POSTED_PATH), 'FAILED')).toEqual({
      problem: 'state_differs',
      transitionId: null,
      expected: 'POSTED',
      found: 'FAILED',
    });
  });
});
