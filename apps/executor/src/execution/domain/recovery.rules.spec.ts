import {
  PAYOUT_STATES,
  type PayoutState,
  type PayoutSummary,
  type PayoutView,
} from '@dlock/payout-contract';
import type { AttemptStep } from './attempt-step.types';
import {
  decideFromRecords,
  firstStep,
  nextStepFor,
  stepForState,
  stepFromEvidence,
  stepFromRecords,
  type ProxyRecord,
} from './recovery.rules';

/** The proxy signs a receipt for an ACKED or REJECTED record only (docs/rail.md, "Receipts"). */
function receiptFor(outcome: ProxyRecord['outcome']): string | null {
  return outcome === 'ACKED' || outcome === 'REJECTED' ? `receipt-${outcome}` : null;
}

function record(
  outcome: ProxyRecord['outcome'],
  railReference: string | null = null,
  over: Partial<ProxyRecord> = {},
): ProxyRecord {
  return {
    submissionId: `sub-${String(outcome)}`,
    outcome,
    railReference,
    presentedToken: 7n,
    railReceipt: receiptFor(outcome),
    ...over,
  };
}

describe('recovery by state (docs/payment-resource.md)', () => {
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

const polled: PayoutSummary = {
  payoutId: 'p-1',
  accountId: 'a-1',
  amountMinor: 100,
  currency: 'EUR',
  beneficiaryRef: 'ben-1',
  state: 'PENDING',
  attemptCount: 0,
  createdAt: '2030-01-01T00:00:00.000Z',
};

function viewIn(state: PayoutState, over: Partial<PayoutView> = {}): PayoutView {
  const { attemptCount: _n, createdAt: _c, ...rest } = polled;
  return { ...rest, state, submissionId: null, railReference: null, ...over };
}

describe('where an attempt starts', () => {
  test('a polled PENDING payout is claimed at once with what the poll carried, re-read only if it moved on', () => {
    expect(firstStep(polled)).toEqual({
      to: 'claim',
      view: { ...polled, submissionId: null, railReference: null },
      expected: 'PENDING',
      rereadIfMoved: true,
    });
  });

  test.each<PayoutState>(['CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED'])(
    'a payout polled as %s is read first',
    (state) => {
      expect(firstStep({ ...polled, state })).toEqual({ to: 'reread' });
    },
  );
});

describe('the step after the re-read', () => {
  test.each<[PayoutState, AttemptStep]>([
    [
      'PENDING',
      { to: 'claim', view: viewIn('PENDING'), expected: 'PENDING', rereadIfMoved: false },
    ],
    [
      'CLAIMED',
      { to: 'claim', view: viewIn('CLAIMED'), expected: 'CLAIMED', rereadIfMoved: false },
    ],
    ['RAIL_SUBMITTED', { to: 'resolve-from-record', view: viewIn('RAIL_SUBMITTED') }],
    ['RAIL_AMBIGUOUS', { to: 'end', result: { kind: 'skipped', reason: 'quarantined' } }],
    ['POSTED', { to: 'end', result: { kind: 'skipped', reason: 'terminal' } }],
    ['FAILED', { to: 'end', result: { kind: 'skipped', reason: 'terminal' } }],
    ['ABANDONED', { to: 'end', result: { kind: 'skipped', reason: 'terminal' } }],
  ])('%s', (state, next) => {
    expect(stepForState(viewIn(state))).toEqual(next);
  });

  test('RAIL_ACKED reads the proxy record (R2) first: P3 is booked on its receipt, not on the view', () => {
    const view = viewIn('RAIL_ACKED', { submissionId: 's-7', railReference: 'rr-7' });
    expect(stepForState(view)).toEqual({ to: 'resolve-from-record', view });
  });

  test.each([
    [{ submissionId: null, railReference: 'rr-7' }],
    [{ submissionId: 's-7', railReference: null }],
  ])('RAIL_ACKED without its reference (%p) is resolved from the record too', (over) => {
    const view = viewIn('RAIL_ACKED', over);
    expect(stepForState(view)).toEqual({ to: 'resolve-from-record', view });
  });
});

describe('the step after the proxy record', () => {
  const view = viewIn('RAIL_SUBMITTED');
  const acked = record('ACKED', 'rail-1');

  test.each<[string, ProxyRecord[], boolean, AttemptStep]>([
    [
      'no live record: RAIL_SUBMITTED again under this token, then the submit',
      [record('FENCED')],
      false,
      { to: 'mark-submitted', view },
    ],
    [
      'no live record after a duplicate: reported, never submitted',
      [record('WITHDRAWN')],
      true,
      {
        to: 'end',
        result: { kind: 'abandoned', reason: 'duplicate-without-record' },
        alarm: 'DUPLICATE_SUBMISSION but no live record',
      },
    ],
    [
      'ACKED: recorded from it, then posted',
      [acked],
      false,
      {
        to: 'record-acked',
        ack: { submissionId: 'sub-ACKED', railReference: 'rail-1', railReceipt: 'receipt-ACKED' },
      },
    ],
    [
      'ACKED after a duplicate: the same',
      [acked],
      true,
      {
        to: 'record-acked',
        ack: { submissionId: 'sub-ACKED', railReference: 'rail-1', railReceipt: 'receipt-ACKED' },
      },
    ],
    [
      'ACKED without a rail reference: quarantined',
      [record('ACKED')],
      false,
      { to: 'quarantine', submissionId: 'sub-ACKED', why: 'acked-record-without-reference' },
    ],
    [
      "ACKED without its receipt: quarantined, never recorded on the worker's word",
      [record('ACKED', 'rail-1', { railReceipt: null })],
      false,
      { to: 'quarantine', submissionId: 'sub-ACKED', why: 'acked-record-without-reference' },
    ],
    [
      "REJECTED: FAILED citing the submission, on the proxy's receipt",
      [record('REJECTED')],
      false,
      {
        to: 'record-rejected',
        submissionId: 'sub-REJECTED',
        why: 'rail declined the transfer',
        railReceipt: 'receipt-REJECTED',
      },
    ],
    [
      'REJECTED without its receipt: quarantined',
      [record('REJECTED', null, { railReceipt: null })],
      false,
      { to: 'quarantine', submissionId: 'sub-REJECTED', why: 'record: rejected-without-receipt' },
    ],
    [
      'TIMEOUT: quarantined',
      [record('TIMEOUT')],
      true,
      { to: 'quarantine', submissionId: 'sub-TIMEOUT', why: 'record: timeout' },
    ],
    [
      'unresolved: quarantined',
      [record(null)],
      false,
      { to: 'quarantine', submissionId: 'sub-null', why: 'record: unresolved' },
    ],
    [
      'several live records: quarantined without a submission',
      [acked, record('REJECTED')],
      false,
      { to: 'quarantine', submissionId: undefined, why: 'record: several-live-records' },
    ],
  ])('%s', (_name, records, afterDuplicate, next) => {
    expect(stepFromRecords(view, records, afterDuplicate)).toEqual(next);
  });
});

describe('the step after the proxy record, for a RAIL_ACKED payout', () => {
  const view = viewIn('RAIL_ACKED', { submissionId: 'sub-ACKED', railReference: 'rail-1' });

  test('the record of the recorded submission: posted with its ack and receipt (no second P6 ACKED)', () => {
    expect(stepFromRecords(view, [record('FENCED'), record('ACKED', 'rail-1')], false)).toEqual({
      to: 'post',
      ack: { submissionId: 'sub-ACKED', railReference: 'rail-1', railReceipt: 'receipt-ACKED' },
    });
  });

  test('submission ids compare without regard to case', () => {
    const upper = viewIn('RAIL_ACKED', { submissionId: 'SUB-ACKED', railReference: 'rail-1' });
    expect(stepFromRecords(upper, [record('ACKED', 'rail-1')], false)).toEqual({
      to: 'post',
      ack: { submissionId: 'sub-ACKED', railReference: 'rail-1', railReceipt: 'receipt-ACKED' },
    });
  });

  test.each<[string, PayoutView, ProxyRecord[]]>([
    [
      'an ACKED record of another submission',
      view,
      [record('ACKED', 'rail-9', { submissionId: 'sub-other' })],
    ],
    [
      'an ACKED record against no recorded submission',
      viewIn('RAIL_ACKED', { submissionId: null, railReference: 'rail-1' }),
      [record('ACKED', 'rail-1')],
    ],
    [
      'an ACKED record without its receipt',
      view,
      [record('ACKED', 'rail-1', { railReceipt: null })],
    ],
    ['only a TIMEOUT record (the reconciler resolved it)', view, [record('TIMEOUT')]],
    ['no record at all', view, []],
  ])('%s: the rail’s record through R3 decides, never a submit or a quarantine', (_n, v, rs) => {
    expect(stepFromRecords(v, rs, false)).toEqual({ to: 'post-from-evidence', view: v });
  });
});

describe('a RAIL_ACKED payout after R3', () => {
  const view = viewIn('RAIL_ACKED', { submissionId: 'sub-1', railReference: 'rail-1' });
  const transfer = (railReference: string) => ({
    railReference,
    clientRef: 'po-1',
    amountMinor: 100,
    currency: 'EUR',
    acceptedAt: '2026-12-01T00:00:00.000Z',
    settled: true,
    settledAt: '2026-12-01T00:00:01.000Z',
    duplicateOf: null,
  });
  const evidence = (transfers: ReturnType<typeof transfer>[], railReceipt: string | null) => ({
    payoutId: 'p-1',
    lookup: {
      clientRef: 'po-1',
      asOf: '2026-12-01T00:01:00.000Z',
      settlementWindowMs: null,
      transfers,
    },
    railReceipt,
  });
  const left = {
    to: 'end',
    result: { kind: 'abandoned', reason: 'acked-without-receipt' },
    alarm: 'RAIL_ACKED payout without a receipted rail record: an operator must read it',
  };

  test('the one transfer of the recorded reference, receipted: posted on that receipt', () => {
    expect(stepFromEvidence(view, evidence([transfer('rail-1')], 'r3'))).toEqual({
      to: 'post',
      ack: { submissionId: 'sub-1', railReference: 'rail-1', railReceipt: 'r3' },
    });
  });

  test.each([
    ['no receipt', evidence([transfer('rail-1')], null), view],
    ['another reference', evidence([transfer('rail-9')], 'r3'), view],
    ['two transfers', evidence([transfer('rail-1'), transfer('rail-2')], 'r3'), view],
    ['no transfer', evidence([], 'r3'), view],
    [
      'no recorded submission',
      evidence([transfer('rail-1')], 'r3'),
      { ...view, submissionId: null },
    ],
  ])('%s: left for an operator, loudly', (_n, ev, v) => {
    expect(stepFromEvidence(v, ev)).toEqual(left);
  });
});
