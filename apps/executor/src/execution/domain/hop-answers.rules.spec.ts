import { PeerUnavailableError } from '@dlock/http-client';
import { DlockError, FencedOutError, LockLostError, type ErrorCode } from '@dlock/lock-api';
import { registerPayoutVocabulary, type PayoutView } from '@dlock/payout-contract';
import type { AttemptStep } from './attempt-step.types';
import {
  afterAckedRefused,
  afterClaimRefused,
  afterSubmitFailure,
  classifyFailure,
  fieldsOf,
  isRefusedAsInvalid,
  RefusedByPaymentResource,
} from './hop-answers.rules';

// The payout codes, as the executor's module registers them when it loads.
registerPayoutVocabulary();

// Each hop's answers and what the attempt does next (docs/executor.md § Outcomes).

const view: PayoutView = {
  payoutId: 'p-1',
  accountId: 'a-1',
  amountMinor: 100,
  currency: 'EUR',
  beneficiaryRef: 'ben-1',
  state: 'RAIL_SUBMITTED',
  submissionId: null,
  railReference: null,
};

function refusal(code: ErrorCode, httpStatus: number, details?: Record<string, unknown>) {
  return new DlockError(code, code, { httpStatus, details });
}

/** A plain error with a `code` property, as Node's system errors have: not a contract answer. */
function coded(code: string): Error {
  return Object.assign(new Error(code), { code, httpStatus: 409, details: {} });
}

const invalid400 = refusal('VALIDATION_FAILED', 400, { fields: [{ field: 'beneficiaryRef' }] });
const byPayments = new RefusedByPaymentResource('record_outcome', invalid400);

describe('the submit: every answer of the proxy other than ACKED', () => {
  const quarantine = (why: string, submissionId?: string): AttemptStep => ({
    to: 'quarantine',
    why,
    ...(submissionId === undefined ? {} : { submissionId }),
  });
  const ended = (reason: string, alarm?: string): AttemptStep => ({
    to: 'end',
    result: { kind: 'abandoned', reason },
    ...(alarm === undefined ? {} : { alarm }),
  });

  it.each<[string, unknown, AttemptStep | undefined]>([
    [
      'no connection: nothing presented',
      new PeerUnavailableError('rail-proxy', 'connect', 'refused'),
      ended('proxy-unreachable'),
    ],
    [
      'connected, no answer: outcome unknown, left RAIL_SUBMITTED, loud',
      new PeerUnavailableError('rail-proxy', 'response', 'no response in time'),
      ended(
        'submit-outcome-unknown',
        'submit outcome unknown (no answer from the proxy: no response in time); left RAIL_SUBMITTED for recovery from the record',
      ),
    ],
    [
      'RAIL_AMBIGUOUS with its reason and submission',
      refusal('RAIL_AMBIGUOUS', 409, { submissionId: 's-1', reason: 'connection-reset' }),
      quarantine('proxy: connection-reset', 's-1'),
    ],
    [
      'RAIL_AMBIGUOUS without a reason: a timeout',
      refusal('RAIL_AMBIGUOUS', 409),
      quarantine('proxy: timeout'),
    ],
    [
      'RAIL_AMBIGUOUS whose submissionId and reason are not strings',
      refusal('RAIL_AMBIGUOUS', 409, { submissionId: 7, reason: 7 }),
      quarantine('proxy: timeout'),
    ],
    [
      "a rail decline (422, outcome REJECTED): FAILED citing the submission, on the proxy's receipt",
      refusal('VALIDATION_FAILED', 422, {
        outcome: 'REJECTED',
        submissionId: 's-1',
        railReceipt: 'receipt-1',
      }),
      {
        to: 'record-rejected',
        submissionId: 's-1',
        why: 'rail declined the transfer',
        railReceipt: 'receipt-1',
      },
    ],
    [
      "a rail decline without its receipt: quarantined, never FAILED on the worker's word",
      refusal('VALIDATION_FAILED', 422, { outcome: 'REJECTED', submissionId: 's-1' }),
      quarantine('rail decline without its receipt', 's-1'),
    ],
    [
      'a rail decline whose receipt is not a string: quarantined',
      refusal('VALIDATION_FAILED', 422, {
        outcome: 'REJECTED',
        submissionId: 's-1',
        railReceipt: 7,
      }),
      quarantine('rail decline without its receipt', 's-1'),
    ],
    [
      'a rail decline with a receipt but no submission: quarantined',
      refusal('VALIDATION_FAILED', 422, { outcome: 'REJECTED', railReceipt: 'receipt-1' }),
      quarantine('rail decline without its receipt'),
    ],
    [
      'refused at the door (400): quarantined, nothing presented, the refusal reported',
      invalid400,
      {
        to: 'quarantine',
        why: 'rail-proxy refused the submission as invalid (VALIDATION_FAILED: beneficiaryRef); nothing was presented to the rail',
        refusal: { hop: 'rail_proxy', step: 'submit', error: invalid400 },
      },
    ],
    [
      'a 400 claiming outcome REJECTED, even with a receipt, is still a refusal at the door, never a decline',
      refusal('VALIDATION_FAILED', 400, {
        outcome: 'REJECTED',
        submissionId: 's-1',
        railReceipt: 'receipt-1',
      }),
      expect.objectContaining({
        to: 'quarantine',
        refusal: expect.objectContaining({ hop: 'rail_proxy', step: 'submit' }),
      }),
    ],
    [
      'outcome REJECTED with a 409: not a rail outcome',
      refusal('VALIDATION_FAILED', 409, { outcome: 'REJECTED', submissionId: 's-1' }),
      undefined,
    ],
    [
      'outcome REJECTED with a 200: not a rail outcome',
      refusal('VALIDATION_FAILED', 200, { outcome: 'REJECTED' }),
      undefined,
    ],
    [
      'a 422 that is not a decline',
      refusal('VALIDATION_FAILED', 422, { outcome: 'ACKED' }),
      undefined,
    ],
    ['a 422 without details', refusal('VALIDATION_FAILED', 422), undefined],
    [
      'DUPLICATE_SUBMISSION: resolved from the record, with the proxy details',
      refusal('DUPLICATE_SUBMISSION', 409, { submissionId: 's-0' }),
      { to: 'resolve-from-record', view, duplicate: { submissionId: 's-0' } },
    ],
    [
      'DUPLICATE_SUBMISSION without details is still a duplicate',
      refusal('DUPLICATE_SUBMISSION', 409),
      { to: 'resolve-from-record', view, duplicate: {} },
    ],
    [
      'RAIL_UNAVAILABLE: nothing presented',
      refusal('RAIL_UNAVAILABLE', 503),
      ended('rail-unavailable'),
    ],
    [
      "FENCED_OUT: not the submit's to answer",
      new FencedOutError('stale', { httpStatus: 409 }),
      undefined,
    ],
    ['INTERNAL', refusal('INTERNAL', 500), undefined],
    ['a non-contract error', new TypeError('boom'), undefined],
    ['a non-contract error carrying a contract code', coded('RAIL_UNAVAILABLE'), undefined],
  ])('%s', (_name, err, next) => {
    expect(afterSubmitFailure(view, err)).toEqual(next);
  });

  it('no refusal at the door is recorded as FAILED: without a receipt nothing moves the ledger', () => {
    const decline = { outcome: 'REJECTED', submissionId: 's-1', railReceipt: 'receipt-1' };
    for (const details of [undefined, decline]) {
      expect(afterSubmitFailure(view, refusal('VALIDATION_FAILED', 400, details))?.to).toBe(
        'quarantine',
      );
    }
  });

  it('no answer of the proxy leads to a second submit', () => {
    const answers: unknown[] = [
      new PeerUnavailableError('rail-proxy', 'response', 'timeout'),
      new PeerUnavailableError('rail-proxy', 'connect', 'refused'),
      ...(
        ['RAIL_AMBIGUOUS', 'DUPLICATE_SUBMISSION', 'RAIL_UNAVAILABLE', 'VALIDATION_FAILED'] as const
      ).flatMap((code) =>
        [400, 409, 422, 503].map((status) => refusal(code, status, { outcome: 'REJECTED' })),
      ),
    ];
    for (const err of answers) expect(afterSubmitFailure(view, err)?.to).not.toBe('submit');
  });
});

describe('the claim', () => {
  it.each<[string, unknown, boolean, AttemptStep | undefined]>([
    [
      'moved on, polled as PENDING: read it and recover by state',
      refusal('PAYOUT_NOT_CLAIMABLE', 409),
      true,
      { to: 'reread' },
    ],
    [
      'moved on after the re-read: skipped, never read again',
      refusal('PAYOUT_NOT_CLAIMABLE', 409),
      false,
      { to: 'end', result: { kind: 'skipped', reason: 'not-claimable' } },
    ],
    [
      'lost the race: another worker already POSTED it, skipped without a read',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'POSTED', expectedState: 'PENDING' }),
      true,
      { to: 'end', result: { kind: 'skipped', reason: 'terminal' } },
    ],
    [
      'lost the race to a decline (FAILED): skipped without a read',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'FAILED', expectedState: 'PENDING' }),
      true,
      { to: 'end', result: { kind: 'skipped', reason: 'terminal' } },
    ],
    [
      'quarantined meanwhile (RAIL_AMBIGUOUS): left alone without a read',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'RAIL_AMBIGUOUS', expectedState: 'PENDING' }),
      true,
      { to: 'end', result: { kind: 'skipped', reason: 'quarantined' } },
    ],
    [
      'moved on to a state a holder continues (RAIL_SUBMITTED): read it and recover by state',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'RAIL_SUBMITTED', expectedState: 'PENDING' }),
      true,
      { to: 'reread' },
    ],
    [
      'a state that is no payout state: read it',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'SETTLED' }),
      true,
      { to: 'reread' },
    ],
    [
      'POSTED after the re-read: skipped as terminal',
      refusal('PAYOUT_NOT_CLAIMABLE', 409, { state: 'POSTED', expectedState: 'CLAIMED' }),
      false,
      { to: 'end', result: { kind: 'skipped', reason: 'terminal' } },
    ],
    [
      'insufficient funds: FAILED by the claim itself',
      refusal('INSUFFICIENT_FUNDS', 409),
      true,
      { to: 'end', result: { kind: 'failed', reason: 'INSUFFICIENT_FUNDS' } },
    ],
    [
      'fenced out: not an answer',
      new FencedOutError('stale', { httpStatus: 409 }),
      true,
      undefined,
    ],
    ['unavailable: not an answer', refusal('UNAVAILABLE', 503), true, undefined],
    [
      'a refusal as invalid: not an answer',
      new RefusedByPaymentResource('claim', invalid400),
      true,
      undefined,
    ],
    ['a non-contract error', new TypeError('boom'), false, undefined],
    [
      'a non-contract error carrying a contract code',
      coded('PAYOUT_NOT_CLAIMABLE'),
      true,
      undefined,
    ],
    [
      'a non-contract error carrying INSUFFICIENT_FUNDS',
      coded('INSUFFICIENT_FUNDS'),
      true,
      undefined,
    ],
  ])('%s', (_name, err, rereadIfMoved, next) => {
    expect(afterClaimRefused(err, rereadIfMoved)).toEqual(next);
  });
});

describe('the ACKED write: the rail took the money', () => {
  it('refused as invalid: quarantined without the refused values, the refusal reported', () => {
    expect(afterAckedRefused(byPayments)).toEqual({
      to: 'quarantine',
      why: 'payment-resource refused the ACKED outcome as invalid',
      refusal: { hop: 'payment_resource', step: 'record_outcome', error: invalid400 },
    });
  });

  it('the refused step is the one payment-resource tagged', () => {
    expect(afterAckedRefused(new RefusedByPaymentResource('post', invalid400))).toMatchObject({
      to: 'quarantine',
      refusal: { hop: 'payment_resource', step: 'post', error: invalid400 },
    });
  });

  it.each<[string, unknown]>([
    ['fenced out', new FencedOutError('stale', { httpStatus: 409 })],
    ['unavailable', refusal('UNAVAILABLE', 503)],
    ['a 400 not tagged by payment-resource', invalid400],
    ['lock lost', new LockLostError('gone')],
    ['a non-contract error', new TypeError('boom')],
  ])('%s: not quarantined, the attempt gives up on it', (_name, err) => {
    expect(afterAckedRefused(err)).toBeUndefined();
  });
});

describe('what a thrown error means for the attempt', () => {
  it.each<[string, unknown, ReturnType<typeof classifyFailure>]>([
    [
      'refused as invalid by payment-resource',
      new RefusedByPaymentResource('claim', invalid400),
      { kind: 'invalid', step: 'claim', refusal: invalid400 },
    ],
    [
      'fenced at the rail',
      new FencedOutError('stale', { details: { resourceType: 'rail', highestToken: '9' } }),
      { kind: 'fenced', where: 'rail', highestToken: '9' },
    ],
    [
      'fenced at the account',
      new FencedOutError('stale', { details: { resourceType: 'account' } }),
      { kind: 'fenced', where: 'account', highestToken: undefined },
    ],
    [
      'fenced, no details',
      new FencedOutError('stale'),
      { kind: 'fenced', where: 'account', highestToken: undefined },
    ],
    ['LOCK_LOST', new LockLostError('gone'), { kind: 'lock-lost', code: 'LOCK_LOST' }],
    [
      'SESSION_EXPIRED',
      refusal('SESSION_EXPIRED', 410),
      { kind: 'lock-lost', code: 'SESSION_EXPIRED' },
    ],
    [
      'SESSION_UNKNOWN',
      refusal('SESSION_UNKNOWN', 404),
      { kind: 'lock-lost', code: 'SESSION_UNKNOWN' },
    ],
    ['another code', refusal('UNAVAILABLE', 503), { kind: 'error', code: 'UNAVAILABLE' }],
    [
      'a 400 VALIDATION_FAILED not tagged by payment-resource',
      invalid400,
      { kind: 'error', code: 'VALIDATION_FAILED' },
    ],
    ['a non-contract error', new TypeError('boom'), { kind: 'error', code: undefined }],
    [
      'a non-contract error carrying LOCK_LOST',
      coded('LOCK_LOST'),
      { kind: 'error', code: undefined },
    ],
  ])('%s', (_name, err, failure) => {
    expect(classifyFailure(err)).toEqual(failure);
  });
});

describe('a refusal as invalid', () => {
  it.each<[string, unknown, boolean]>([
    ['400 VALIDATION_FAILED', invalid400, true],
    ['422 VALIDATION_FAILED', refusal('VALIDATION_FAILED', 422), false],
    ['400 of another code', refusal('INVALID_TOKEN', 400), false],
    ['not a contract error', new Error('VALIDATION_FAILED'), false],
  ])('%s: %p', (_name, err, refused) => {
    expect(isRefusedAsInvalid(err)).toBe(refused);
  });

  it.each<[Record<string, unknown> | undefined, string]>([
    [undefined, 'VALIDATION_FAILED'],
    [{ fields: 'amount' }, 'VALIDATION_FAILED'],
    [{ fields: [{ field: 'a' }, { field: 3 }, null, 'x'] }, 'VALIDATION_FAILED: a, ?, ?, ?'],
  ])('fields %p are named as %j (names only, never values)', (details, named) => {
    expect(fieldsOf(refusal('VALIDATION_FAILED', 400, details))).toBe(named);
  });

  it('a long list of fields is cut to 200 characters', () => {
    const fields = Array.from({ length: 100 }, (_, i) => ({ field: `field${i}` }));
    expect(fieldsOf(refusal('VALIDATION_FAILED', 400, { fields }))).toHaveLength(200);
  });

  it('carries the refused step and the refusal', () => {
    expect(byPayments).toMatchObject({
      step: 'record_outcome',
      refusal: invalid400,
      message: 'payment-resource refused record_outcome as invalid: VALIDATION_FAILED',
      cause: invalid400,
    });
  });
});
