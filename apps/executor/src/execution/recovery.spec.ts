import { PAYOUT_STATES } from '@dlock/payout-contract';
import { decideFromRecords, nextStepFor, type ProxyRecord } from './recovery';

function record(outcome: ProxyRecord['outcome'], railReference: string | null = null): ProxyRecord {
  return { submissionId: `sub-${String(outcome)}`, outcome, railReference, presentedToken: 7n };
}

describe('recovery by state (02 §2.3)', () => {
  test.each([
    ['PENDING', 'claim'],
    ['CLAIMED', 'reclaim'],
    ['RAIL_SUBMITTED', 'resolve-from-record'],
    ['RAIL_ACKED', 'post'],
    ['RAIL_AMBIGUOUS', 'leave'],
    ['POSTED', 'leave'],
    ['FAILED', 'leave'],
    ['ABANDONED', 'leave'],
  ] as const)('%s → %s', (state, step) => {
    expect(nextStepFor(state).step).toBe(step);
  });

  test('every state has a decision, and only RAIL_AMBIGUOUS is quarantined', () => {
    const quarantined = PAYOUT_STATES.filter((st) => {
      const next = nextStepFor(st);
      return next.step === 'leave' && next.why === 'quarantined';
    });
    expect(quarantined).toEqual(['RAIL_AMBIGUOUS']);
  });
});

describe('resolving RAIL_SUBMITTED from the proxy record (R2)', () => {
  test('no record: submit (the proxy fence and uniqueness guard a race)', () => {
    expect(decideFromRecords([])).toEqual({ action: 'submit' });
  });

  test('only FENCED rows: nothing was presented, submit', () => {
    expect(decideFromRecords([record('FENCED'), record('FENCED')])).toEqual({ action: 'submit' });
  });

  test('a WITHDRAWN row presented nothing either: submit', () => {
    expect(decideFromRecords([record('WITHDRAWN'), record('FENCED')])).toEqual({
      action: 'submit',
    });
  });

  test('ACKED → record ACKED then post; REJECTED → FAILED', () => {
    const acked = record('ACKED', 'rail-1');
    expect(decideFromRecords([record('FENCED'), acked])).toEqual({
      action: 'record-acked',
      record: acked,
    });
    const rejected = record('REJECTED');
    expect(decideFromRecords([rejected])).toEqual({ action: 'record-rejected', record: rejected });
  });

  test('TIMEOUT or unresolved → ambiguous, never a resubmit', () => {
    expect(decideFromRecords([record('TIMEOUT')])).toMatchObject({
      action: 'record-ambiguous',
      why: 'timeout',
    });
    expect(decideFromRecords([record(null)])).toMatchObject({
      action: 'record-ambiguous',
      why: 'unresolved',
    });
  });

  test('two live records cannot be reasoned about: ambiguous', () => {
    expect(decideFromRecords([record('ACKED', 'r'), record(null)])).toMatchObject({
      action: 'record-ambiguous',
      record: null,
    });
  });
});
