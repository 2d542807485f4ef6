import { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import {
  ContentionError,
  DlockError,
  FencedOutError,
  LockLostError,
  type ErrorCode,
  type FencingToken,
} from '@dlock/lock-api';
import type { LockSession } from '@dlock/lock-client';
import type { FenceCredential } from '@dlock/lock-api';
import { registerSafetyEvents, SafetyEvents } from '@dlock/observability';
import { PeerUnavailableError } from '@dlock/http-client';
import {
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
  type PaymentResourceClient,
  type PayoutState,
  type PayoutSummary,
  type PayoutView,
  type RailProxyClient,
} from '@dlock/payout-contract';
import { readExecutorConfig } from '../../config';
import { ExecutorMetrics } from '../../executor.metrics';
import { AttemptHooks, type AttemptPoint } from '../domain/attempt-hooks.port';
import { MonotonicExecutionClock } from '../domain/execution-clock.port';
import type { ProxyRecord } from '../domain/recovery.rules';
import { MAX_STEPS_PER_ATTEMPT, PayoutExecutionService } from './payout-execution.service';

// What the executor's module registers when it loads (app.module.ts).
registerPayoutVocabulary();
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);

const AUTH = {
  AUTH_JWKS: '/run/dlock/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/run/dlock/policy.yaml',
  AUTH_TOKEN_DIR: '/run/dlock/tokens',
};

// The orchestration of one attempt with fake hops: which calls go out, in which
// order, and how often (the real hops are covered by the medium tests).

const TOKEN: FencingToken = 42n;
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

type Outcome = 'SUBMITTED' | 'ACKED' | 'REJECTED' | 'AMBIGUOUS';

/** The proxy's signed receipt of a submission's answer: opaque to the executor, carried as is. */
const receiptOf = (submissionId: string) => `receipt-${submissionId}`;

/** The proxy's record of a submission (R2); ACKED and REJECTED records carry their receipt. */
function proxyRecord(over: Partial<ProxyRecord> = {}): ProxyRecord {
  const r = {
    submissionId: 's-9',
    outcome: 'ACKED' as ProxyRecord['outcome'],
    railReference: 'rr-9',
    presentedToken: 7n,
    ...over,
  };
  const receipted = r.outcome === 'ACKED' || r.outcome === 'REJECTED';
  return { railReceipt: receipted ? receiptOf(r.submissionId) : null, ...r };
}

/** A rail decline (422) as the proxy answers it, with its receipt. */
const DECLINE_DETAILS = { outcome: 'REJECTED', submissionId: 's-1', railReceipt: receiptOf('s-1') };

interface Options {
  /** `posted-elsewhere`: the refusal names the state it found, POSTED (a lost race). */
  firstClaim?: 'ok' | 'not-claimable' | 'posted-elsewhere';
  stateOnReread?: PayoutState;
  acquire?: () => Promise<void>;
  claim?: () => Promise<void>;
  reread?: () => Promise<void>;
  submit?: () => Promise<{ submissionId: string; railReference: string; railReceipt: string }>;
  railOutcome?: (outcome: Outcome, reason?: string) => Promise<void>;
  post?: () => Promise<void>;
  records?: ProxyRecord[];
  /** R3's answer: the rail's transfers and the receipt they earn (default: none, no receipt). */
  evidence?: { railReferences: string[]; railReceipt: string | null };
  /** checkStillHeld throws LockLostError from its n-th call on (1-based). */
  lostAtCheck?: number;
  /** What the re-read shows besides the state (submission id, rail reference). */
  view?: Partial<PayoutView>;
  /** The lease the handle was granted (default 20 s: covers the submit budget). */
  lockTtlMs?: number;
  env?: Record<string, string>;
  stop?: AbortSignal;
  /** What the harness hook does at a point (recorded in calls as `at <point>` either way). */
  at?: (point: AttemptPoint) => void;
}

/** Records the points an attempt passes, as the harness's crash and pause points see them. */
class RecordingHooks extends AttemptHooks {
  constructor(
    private readonly calls: string[],
    private readonly at: (point: AttemptPoint) => void = () => undefined,
  ) {
    super();
  }

  reached(point: AttemptPoint): Promise<void> {
    this.calls.push(`at ${point}`);
    this.at(point);
    return Promise.resolve();
  }
}

/** A refusal as invalid, as JsonPeer builds it from a 400 envelope. */
function invalid(field: string): DlockError {
  return new DlockError('VALIDATION_FAILED', 'invalid request', {
    httpStatus: 400,
    details: { fields: [{ field, message: 'is not valid' }] },
  });
}

function harness(opts: Options = {}) {
  const calls: string[] = [];
  const outcomes: Record<string, unknown>[] = [];
  const posts: unknown[] = [];
  const ok = () => Promise.resolve();
  const instructions: string[] = [];
  const payments = {
    claim: async (_id: string, fence: FenceCredential, expected: 'PENDING' | 'CLAIMED') => {
      calls.push(`claim ${expected} ${fence.token}`);
      if (expected === 'PENDING' && opts.firstClaim === 'not-claimable') {
        throw new DlockError('PAYOUT_NOT_CLAIMABLE', 'moved on');
      }
      if (expected === 'PENDING' && opts.firstClaim === 'posted-elsewhere') {
        throw new DlockError('PAYOUT_NOT_CLAIMABLE', 'moved on', {
          httpStatus: 409,
          details: { payoutId: 'p-1', state: 'POSTED', expectedState: 'PENDING' },
        });
      }
      await (opts.claim ?? ok)();
      return { payoutId: polled.payoutId, state: 'CLAIMED' };
    },
    get: async (): Promise<PayoutView> => {
      calls.push('get');
      await (opts.reread ?? ok)();
      return Promise.resolve({
        ...polled,
        state: opts.stateOnReread ?? 'PENDING',
        submissionId: null,
        railReference: null,
        ...opts.view,
      });
    },
    railOutcome: async (
      _id: string,
      _f: FenceCredential,
      record: { outcome: Outcome; reason?: string },
    ) => {
      calls.push(`rail-outcome ${record.outcome}`);
      outcomes.push(record);
      await (opts.railOutcome ?? ok)(record.outcome, record.reason);
      return { payoutId: polled.payoutId, state: 'RAIL_SUBMITTED' };
    },
    // P6 SUBMITTED: recorded like every outcome, answering the instruction the submit carries.
    markSubmitted: async (id: string, fence: FenceCredential) => {
      const answer = await payments.railOutcome(id, fence, { outcome: 'SUBMITTED' });
      const railInstruction = `instruction-${instructions.length + 1}@${fence.token}`;
      instructions.push(railInstruction);
      return { ...answer, railInstruction };
    },
    post: async (_id: string, _f: FenceCredential, ack: unknown) => {
      calls.push('post');
      posts.push(ack);
      await (opts.post ?? ok)();
      return { payoutId: polled.payoutId, state: 'POSTED' };
    },
  };
  const submittedUnder: string[] = [];
  const rail = {
    submit: (_f: FenceCredential, instruction: string, body: { beneficiaryRef: string }) => {
      calls.push(`submit ${body.beneficiaryRef}`);
      submittedUnder.push(instruction);
      return (
        opts.submit ??
        (() =>
          Promise.resolve({
            submissionId: 's-1',
            railReference: 'rr-1',
            railReceipt: receiptOf('s-1'),
          }))
      )();
    },
    records: () => {
      calls.push('records');
      return Promise.resolve(opts.records ?? []);
    },
    evidence: (payoutId: string) => {
      calls.push('evidence');
      const ev = opts.evidence ?? { railReferences: [], railReceipt: null };
      const transfers = ev.railReferences.map((railReference) => ({
        railReference,
        clientRef: `po-${payoutId}`,
        amountMinor: 100,
        currency: 'EUR',
        acceptedAt: '2026-12-01T00:00:00.000Z',
        settled: true,
        settledAt: '2026-12-01T00:00:01.000Z',
        duplicateOf: null,
      }));
      const lookup = {
        clientRef: `po-${payoutId}`,
        asOf: '2026-12-01T00:01:00.000Z',
        settlementWindowMs: null,
        transfers,
      };
      return Promise.resolve({ payoutId, lookup, railReceipt: ev.railReceipt });
    },
  };
  const now = Date.now();
  let checks = 0;
  const ttlMs = opts.lockTtlMs ?? 20_000;
  // The SDK's view of the lease: granted at acquire, shortened by the default 0.3 margin.
  const leaseDeadlineMs = performance.now() + ttlMs * 0.7;
  const handle = {
    fencingToken: TOKEN,
    fence: { token: TOKEN, proof: 'grant-proof' },
    ttlMs,
    acquiredAt: new Date(now),
    expiresAt: new Date(now + ttlMs),
    leaseCovers: (budgetMs: number) => {
      const remainingMs = Math.max(0, leaseDeadlineMs - performance.now());
      return { ok: remainingMs >= budgetMs, remainingMs, requiredMs: budgetMs };
    },
    checkStillHeld: () => {
      checks++;
      calls.push('check');
      if (opts.lostAtCheck !== undefined && checks >= opts.lostAtCheck) {
        throw new LockLostError('lock lost (lock_deadline)');
      }
    },
    release: () => {
      calls.push('release');
      return Promise.resolve(true);
    },
  };
  // Only acquire() (the SDK's retry budget) exists: a single tryAcquire would be a TypeError here.
  const session = {
    acquire: async (key: string, options: { signal?: AbortSignal }) => {
      calls.push(`acquire ${key}${options.signal ? ' with-signal' : ''}`);
      await (opts.acquire ?? ok)();
      return handle;
    },
  };
  const metrics = new ExecutorMetrics();
  const safetyRegistry = new Registry();
  const service = new PayoutExecutionService(
    readExecutorConfig({ OWNER_ID: 'exec-test', ...AUTH, ...opts.env }),
    payments as unknown as PaymentResourceClient,
    rail as unknown as RailProxyClient,
    metrics,
    new SafetyEvents(safetyRegistry),
    new RecordingHooks(calls, opts.at),
    new MonotonicExecutionClock(),
  );
  const run = (payout: PayoutSummary = polled) =>
    service.execute(
      session as unknown as LockSession,
      payout,
      opts.stop ?? new AbortController().signal,
    );
  const ambiguousCount = async () =>
    (await safetyRegistry.getSingleMetric('rail_ambiguous_total')?.get())?.values[0]?.value ?? 0;
  const invalidCount = async (hop: string) =>
    (await metrics.payoutInvalidTotal.get()).values.find((v) => v.labels.hop === hop)?.value ?? 0;
  const railAmbiguous = jest.spyOn(SafetyEvents.prototype, 'record');
  railAmbiguous.mockClear();
  return {
    calls,
    outcomes,
    posts,
    instructions,
    submittedUnder,
    run,
    service,
    invalidCount,
    ambiguousCount,
    metrics,
    railAmbiguous,
  };
}

/** The executor's error-level log lines as (fields, message) pairs. */
function errorLogs(): jest.SpyInstance {
  return jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
}

afterEach(() => {
  jest.restoreAllMocks();
});

/** The calls without the liveness checks and the harness points. */
function effects(calls: string[]): string[] {
  return calls.filter((c) => c !== 'check' && !c.startsWith('at '));
}

const HAPPY = [
  'acquire payout:a-1 with-signal',
  'claim PENDING 42',
  'rail-outcome SUBMITTED',
  'submit ben-1',
  'rail-outcome ACKED',
  'post',
  'release',
];

it('claims a polled PENDING payout without reading it first, and submits what the poll carried', async () => {
  const { calls, run, instructions, submittedUnder } = harness();
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  expect(effects(calls)).toEqual(HAPPY);
  // The submit carries the instruction payment-resource answered RAIL_SUBMITTED with (docs/rail.md).
  expect(submittedUnder).toEqual(instructions);
  expect(instructions).toEqual(['instruction-1@42']);
});

it('records ACKED and posts on the proxy receipt of the ack (docs/rail.md, Receipts)', async () => {
  const { outcomes, posts, run } = harness();
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  const ack = { submissionId: 's-1', railReference: 'rr-1', railReceipt: receiptOf('s-1') };
  expect(outcomes).toEqual([{ outcome: 'SUBMITTED' }, { outcome: 'ACKED', ...ack }]);
  expect(posts).toEqual([ack]);
});

it('when the claim finds the payout moved on, reads it and recovers by state (re-claim)', async () => {
  const { calls, run } = harness({ firstClaim: 'not-claimable', stateOnReread: 'CLAIMED' });
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  expect(effects(calls)).toEqual([
    'acquire payout:a-1 with-signal',
    'claim PENDING 42',
    'get',
    'claim CLAIMED 42',
    'rail-outcome SUBMITTED',
    'submit ben-1',
    'rail-outcome ACKED',
    'post',
    'release',
  ]);
});

it('a stale poll of a payout already POSTED does nothing but release', async () => {
  const { calls, run } = harness({ firstClaim: 'not-claimable', stateOnReread: 'POSTED' });
  expect(await run()).toMatchObject({ kind: 'skipped', payoutId: 'p-1' });
  expect(effects(calls)).toEqual([
    'acquire payout:a-1 with-signal',
    'claim PENDING 42',
    'get',
    'release',
  ]);
});

it('a claim that lost the race to another worker skips the payout without reading it', async () => {
  const { calls, run } = harness({ firstClaim: 'posted-elsewhere' });
  expect(await run()).toEqual({ kind: 'skipped', payoutId: 'p-1', reason: 'terminal' });
  expect(effects(calls)).toEqual(['acquire payout:a-1 with-signal', 'claim PENDING 42', 'release']);
});

describe('acquire', () => {
  it('CONTENTION_EXCEEDED after the retry budget ends the attempt as contended, with no side effect', async () => {
    const { calls, run } = harness({
      acquire: () => Promise.reject(new ContentionError('still contended after 5 attempts')),
    });
    expect(await run()).toEqual({ kind: 'contended', payoutId: 'p-1' });
    expect(calls).toEqual(['acquire payout:a-1 with-signal']);
  });

  it('a non-contract error carrying CONTENTION_EXCEEDED is not contention: thrown to the lane', async () => {
    const err = Object.assign(new Error('odd'), { code: 'CONTENTION_EXCEEDED' });
    const { calls, run } = harness({ acquire: () => Promise.reject(err) });
    await expect(run()).rejects.toBe(err);
    expect(calls).toEqual(['acquire payout:a-1 with-signal']);
  });

  it('any other acquire failure is thrown to the lane (fail closed), with no side effect', async () => {
    const { calls, run } = harness({
      acquire: () => Promise.reject(new DlockError('SESSION_EXPIRED', 'gone')),
    });
    await expect(run()).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
    expect(calls).toEqual(['acquire payout:a-1 with-signal']);
  });
});

describe('the submit is never retried by the executor', () => {
  it('no answer from the proxy (read timeout): one submit, left RAIL_SUBMITTED, released', async () => {
    const { calls, run } = harness({
      submit: () =>
        Promise.reject(new PeerUnavailableError('rail-proxy', 'response', 'no response in time')),
    });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'submit-outcome-unknown',
    });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'rail-outcome SUBMITTED',
      'submit ben-1',
      'release',
    ]);
  });

  it('RAIL_AMBIGUOUS from the proxy: one submit, then quarantined, released', async () => {
    const { calls, run } = harness({
      submit: () =>
        Promise.reject(
          new DlockError('RAIL_AMBIGUOUS', 'outcome unknown', {
            httpStatus: 409,
            details: { submissionId: 's-1', reason: 'timeout' },
          }),
        ),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls).filter((c) => c.startsWith('submit'))).toHaveLength(1);
    expect(effects(calls).slice(-2)).toEqual(['rail-outcome AMBIGUOUS', 'release']);
  });
});

describe('liveness is checked before every side effect', () => {
  it('a check precedes the claim, the SUBMITTED write, the submit, the ACKED write and the post', async () => {
    const { calls, run } = harness();
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    for (const effect of HAPPY.slice(1, -1)) {
      const at = calls.indexOf(effect);
      expect([effect, calls[at - 1]]).toEqual([effect, 'check']);
    }
  });

  // The n-th check fails: the side effect it guards never goes out, and the lock is released.
  it.each([
    [1, 'claim PENDING 42'],
    [2, 'rail-outcome SUBMITTED'],
    [3, 'submit ben-1'],
    [4, 'rail-outcome ACKED'],
    [5, 'post'],
  ])('a lock lost at check %d stops before %s', async (n, guarded) => {
    const { calls, run } = harness({ lostAtCheck: n });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lock-lost' });
    const done = effects(calls);
    expect(done).toEqual([...HAPPY.slice(0, HAPPY.indexOf(guarded)), 'release']);
  });
});

describe('the lock is released exactly once on every path', () => {
  const fenced = () =>
    Promise.reject(
      new FencedOutError('stale', { httpStatus: 409, details: { resourceType: 'account' } }),
    );
  it.each<[string, Options, string]>([
    ['posted', {}, 'posted'],
    [
      'rail decline (failed)',
      {
        submit: () =>
          Promise.reject(
            new DlockError('VALIDATION_FAILED', 'declined', {
              httpStatus: 422,
              details: DECLINE_DETAILS,
            }),
          ),
      },
      'failed',
    ],
    [
      'insufficient funds (failed)',
      { claim: () => Promise.reject(new DlockError('INSUFFICIENT_FUNDS', 'no funds')) },
      'failed',
    ],
    [
      'ambiguous',
      {
        submit: () =>
          Promise.reject(new DlockError('RAIL_AMBIGUOUS', 'unknown', { httpStatus: 409 })),
      },
      'ambiguous',
    ],
    ['fenced at the claim', { claim: fenced }, 'fenced'],
    ['fenced at the post', { post: fenced }, 'fenced'],
    [
      'an unexpected error thrown mid-way (ACKED write)',
      {
        railOutcome: (o) =>
          o === 'ACKED' ? Promise.reject(new TypeError('boom')) : Promise.resolve(),
      },
      'abandoned',
    ],
    ['lock lost mid-way', { lostAtCheck: 3 }, 'abandoned'],
  ])('%s', async (_name, opts, kind) => {
    const { calls, run } = harness(opts);
    expect(await run()).toMatchObject({ kind, payoutId: 'p-1' });
    expect(calls.filter((c) => c === 'release')).toHaveLength(1);
    expect(calls.at(-1)).toBe('release');
  });
});

describe('a payout refused as invalid is never retried', () => {
  it('refused by the proxy at its door: quarantined (no receipt to fail it on), one submit, counted with hop=rail_proxy', async () => {
    const { calls, outcomes, run, invalidCount, ambiguousCount } = harness({
      submit: () => Promise.reject(invalid('beneficiaryRef')),
    });
    const before = await invalidCount('rail_proxy');
    const beforePayments = await invalidCount('payment_resource');
    const ambiguousBefore = await ambiguousCount();
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'rail-outcome SUBMITTED',
      'submit ben-1',
      'rail-outcome AMBIGUOUS',
      'release',
    ]);
    // Never REJECTED on this worker's word: the reconciler ends it FAILED on the rail's record.
    expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED', 'AMBIGUOUS']);
    expect(outcomes.at(-1)).toEqual({
      outcome: 'AMBIGUOUS',
      reason:
        'rail-proxy refused the submission as invalid (VALIDATION_FAILED: beneficiaryRef); nothing was presented to the rail',
    });
    expect(await invalidCount('rail_proxy')).toBe(before + 1);
    expect(await invalidCount('payment_resource')).toBe(beforePayments);
    expect(await ambiguousCount()).toBe(ambiguousBefore + 1);
  });

  it('refused by payment-resource before the rail: left alone by this process, counted with hop=payment_resource', async () => {
    const { calls, run, service, invalidCount } = harness({
      claim: () => Promise.reject(invalid('expectedState')),
    });
    const before = await invalidCount('payment_resource');
    expect(service.wasRefusedAsInvalid('p-1')).toBe(false);
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'invalid' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'release',
    ]);
    expect(service.wasRefusedAsInvalid('p-1')).toBe(true);
    expect(await invalidCount('payment_resource')).toBe(before + 1);
  });

  it('an ACKED outcome refused by payment-resource: money moved, so quarantined, never FAILED', async () => {
    const { calls, run, invalidCount } = harness({
      railOutcome: (o) =>
        o === 'ACKED' ? Promise.reject(invalid('railReference')) : Promise.resolve(),
    });
    const before = await invalidCount('payment_resource');
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls).slice(-3)).toEqual([
      'rail-outcome ACKED',
      'rail-outcome AMBIGUOUS',
      'release',
    ]);
    expect(await invalidCount('payment_resource')).toBe(before + 1);
  });
});

describe('recovery by state after the re-read', () => {
  const record = proxyRecord;
  const reread = (state: PayoutState, more: Options = {}) =>
    harness({ firstClaim: 'not-claimable', stateOnReread: state, ...more });
  const AFTER_REREAD = ['acquire payout:a-1 with-signal', 'claim PENDING 42', 'get'];

  it.each<[PayoutState, string]>([
    ['RAIL_AMBIGUOUS', 'quarantined'],
    ['POSTED', 'terminal'],
    ['FAILED', 'terminal'],
    ['ABANDONED', 'terminal'],
  ])('%s is left alone (%s)', async (state, why) => {
    const { calls, run } = reread(state);
    expect(await run()).toEqual({ kind: 'skipped', payoutId: 'p-1', reason: why });
    expect(effects(calls)).toEqual([...AFTER_REREAD, 'release']);
  });

  it('RAIL_ACKED reads the proxy record (R2) and is posted on its receipt, nothing re-submitted or re-recorded', async () => {
    const { calls, outcomes, posts, run } = reread('RAIL_ACKED', {
      view: { submissionId: 's-9', railReference: 'rr-9' },
      records: [record({ outcome: 'FENCED', submissionId: 's-8' }), record({})],
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([...AFTER_REREAD, 'records', 'post', 'release']);
    expect(calls[calls.indexOf('post') - 1]).toBe('check');
    expect(outcomes).toEqual([]);
    expect(posts).toEqual([
      { submissionId: 's-9', railReference: 'rr-9', railReceipt: receiptOf('s-9') },
    ]);
  });

  it("RAIL_ACKED without a rail reference in the view is posted with the record's", async () => {
    const { posts, run } = reread('RAIL_ACKED', {
      view: { submissionId: 's-9', railReference: null },
      records: [record({})],
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(posts).toEqual([
      { submissionId: 's-9', railReference: 'rr-9', railReceipt: receiptOf('s-9') },
    ]);
  });

  it.each<[string, Partial<PayoutView>, ProxyRecord[]]>([
    ['another submission', { submissionId: 's-7', railReference: 'rr-7' }, [record({})]],
    ['no submission', { submissionId: null, railReference: 'rr-9' }, [record({})]],
    [
      'a record without its receipt',
      { submissionId: 's-9', railReference: 'rr-9' },
      [record({ railReceipt: null })],
    ],
    [
      'only a TIMEOUT record (resolved by the reconciler)',
      { submissionId: 's-9', railReference: 'rr-9' },
      [record({ outcome: 'TIMEOUT' })],
    ],
  ])(
    'RAIL_ACKED with %s and no receipted rail record: R3 read, nothing written, left loudly',
    async (_n, view, records) => {
      const { calls, outcomes, posts, run } = reread('RAIL_ACKED', { view, records });
      expect(await run()).toEqual({
        kind: 'abandoned',
        payoutId: 'p-1',
        reason: 'acked-without-receipt',
      });
      expect(effects(calls)).toEqual([...AFTER_REREAD, 'records', 'evidence', 'release']);
      expect(outcomes).toEqual([]);
      expect(posts).toEqual([]);
    },
  );

  it('RAIL_ACKED the reconciler resolved (TIMEOUT record): posted on R3’s receipt of the recorded reference', async () => {
    const { calls, outcomes, posts, run } = reread('RAIL_ACKED', {
      view: { submissionId: 's-9', railReference: 'rr-9' },
      records: [record({ outcome: 'TIMEOUT' })],
      evidence: { railReferences: ['rr-9'], railReceipt: 'r3-receipt' },
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([...AFTER_REREAD, 'records', 'evidence', 'post', 'release']);
    expect(outcomes).toEqual([]);
    expect(posts).toEqual([
      { submissionId: 's-9', railReference: 'rr-9', railReceipt: 'r3-receipt' },
    ]);
  });

  it('RAIL_SUBMITTED with no live record: nothing was presented, so it is marked again under this token and submitted (no new claim)', async () => {
    const { calls, run, instructions, submittedUnder } = reread('RAIL_SUBMITTED', {
      records: [record({ outcome: 'FENCED' }), record({ outcome: 'WITHDRAWN' })],
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      // The instruction to submit on is this token's, not the dead holder's (docs/rail.md).
      'rail-outcome SUBMITTED',
      'submit ben-1',
      'rail-outcome ACKED',
      'post',
      'release',
    ]);
    expect(submittedUnder).toEqual(instructions);
  });

  it('RAIL_SUBMITTED with an ACKED record: the outcome is recorded from it and posted, never re-submitted', async () => {
    const { calls, outcomes, posts, run } = reread('RAIL_SUBMITTED', { records: [record({})] });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      'rail-outcome ACKED',
      'post',
      'release',
    ]);
    const ack = { submissionId: 's-9', railReference: 'rr-9', railReceipt: receiptOf('s-9') };
    expect(outcomes).toEqual([{ outcome: 'ACKED', ...ack }]);
    expect(posts).toEqual([ack]);
  });

  it('an ACKED record without a rail reference is quarantined, not posted', async () => {
    const { calls, outcomes, run, ambiguousCount } = reread('RAIL_SUBMITTED', {
      records: [record({ railReference: null })],
    });
    const before = await ambiguousCount();
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      'rail-outcome AMBIGUOUS',
      'release',
    ]);
    expect(outcomes).toEqual([
      { outcome: 'AMBIGUOUS', submissionId: 's-9', reason: 'acked-record-without-reference' },
    ]);
    expect(await ambiguousCount()).toBe(before + 1);
  });

  it('an ACKED record without its receipt is quarantined: nothing recorded ACKED, not posted', async () => {
    const { calls, outcomes, run } = reread('RAIL_SUBMITTED', {
      records: [record({ railReceipt: null })],
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      'rail-outcome AMBIGUOUS',
      'release',
    ]);
    expect(outcomes).toEqual([
      { outcome: 'AMBIGUOUS', submissionId: 's-9', reason: 'acked-record-without-reference' },
    ]);
  });

  it('an ACKED record whose ACKED write payment-resource refuses as invalid: quarantined', async () => {
    const { outcomes, run } = reread('RAIL_SUBMITTED', {
      records: [record({})],
      railOutcome: (o) =>
        o === 'ACKED' ? Promise.reject(invalid('railReference')) : Promise.resolve(),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(outcomes.map((o) => o.outcome)).toEqual(['ACKED', 'AMBIGUOUS']);
  });

  it('a REJECTED record fails the payout through REJECTED, citing the submission', async () => {
    const { calls, outcomes, run } = reread('RAIL_SUBMITTED', {
      records: [record({ outcome: 'REJECTED', railReference: null })],
    });
    expect(await run()).toEqual({ kind: 'failed', payoutId: 'p-1', reason: 'RAIL_REJECTED' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      'rail-outcome REJECTED',
      'release',
    ]);
    expect(outcomes).toEqual([
      {
        outcome: 'REJECTED',
        submissionId: 's-9',
        reason: 'rail declined the transfer',
        railReceipt: receiptOf('s-9'),
      },
    ]);
  });

  it('a REJECTED record without its receipt is quarantined, never FAILED', async () => {
    const { calls, outcomes, run } = reread('RAIL_SUBMITTED', {
      records: [record({ outcome: 'REJECTED', railReference: null, railReceipt: null })],
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...AFTER_REREAD,
      'records',
      'rail-outcome AMBIGUOUS',
      'release',
    ]);
    expect(outcomes).toEqual([
      { outcome: 'AMBIGUOUS', submissionId: 's-9', reason: 'record: rejected-without-receipt' },
    ]);
  });

  it.each<[ProxyRecord[], string, string | undefined]>([
    [[record({ outcome: 'TIMEOUT', railReference: null })], 'record: timeout', 's-9'],
    [[record({ outcome: null, railReference: null })], 'record: unresolved', 's-9'],
    [[record({}), record({ submissionId: 's-10' })], 'record: several-live-records', undefined],
  ])('an unknown outcome in the record is quarantined (%#)', async (records, reason, id) => {
    const { calls, outcomes, run } = reread('RAIL_SUBMITTED', { records });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls).filter((c) => c.startsWith('submit'))).toEqual([]);
    expect(outcomes).toEqual([
      { outcome: 'AMBIGUOUS', reason, ...(id === undefined ? {} : { submissionId: id }) },
    ]);
  });
});

describe('every answer of the submit, and what is written after it', () => {
  const refuse = (code: ErrorCode, httpStatus: number, details?: Record<string, unknown>) => () =>
    Promise.reject(new DlockError(code, code, { httpStatus, details }));
  const UP_TO_SUBMIT = [
    'acquire payout:a-1 with-signal',
    'claim PENDING 42',
    'rail-outcome SUBMITTED',
    'submit ben-1',
  ];

  it('a proxy it cannot connect to: nothing was presented, left RAIL_SUBMITTED', async () => {
    const { calls, run } = harness({
      submit: () =>
        Promise.reject(new PeerUnavailableError('rail-proxy', 'connect', 'connection refused')),
    });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'proxy-unreachable',
    });
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'release']);
  });

  it('RAIL_UNAVAILABLE: nothing was presented, left RAIL_SUBMITTED for a later pass', async () => {
    const { calls, run } = harness({ submit: refuse('RAIL_UNAVAILABLE', 503) });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'rail-unavailable' });
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'release']);
  });

  it('RAIL_AMBIGUOUS is quarantined with the proxy reason and submission, and counted', async () => {
    const { outcomes, run, ambiguousCount } = harness({
      submit: refuse('RAIL_AMBIGUOUS', 409, { submissionId: 's-1', reason: 'connection-reset' }),
    });
    const before = await ambiguousCount();
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(outcomes.at(-1)).toEqual({
      outcome: 'AMBIGUOUS',
      submissionId: 's-1',
      reason: 'proxy: connection-reset',
    });
    expect(await ambiguousCount()).toBe(before + 1);
  });

  it('RAIL_AMBIGUOUS without details: reason timeout, no submission id', async () => {
    const { outcomes, run } = harness({ submit: refuse('RAIL_AMBIGUOUS', 409, { reason: 7 }) });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(outcomes.at(-1)).toEqual({ outcome: 'AMBIGUOUS', reason: 'proxy: timeout' });
  });

  it('a quarantine whose write fails is still ambiguous: never retried, never failed', async () => {
    const { calls, run } = harness({
      submit: refuse('RAIL_AMBIGUOUS', 409),
      railOutcome: (o) =>
        o === 'AMBIGUOUS'
          ? Promise.reject(new DlockError('UNAVAILABLE', 'down'))
          : Promise.resolve(),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls).slice(-2)).toEqual(['rail-outcome AMBIGUOUS', 'release']);
  });

  it("a rail decline (422, outcome REJECTED) fails the payout on the proxy's receipt, citing the submission", async () => {
    const { outcomes, run } = harness({
      submit: refuse('VALIDATION_FAILED', 422, DECLINE_DETAILS),
    });
    expect(await run()).toEqual({ kind: 'failed', payoutId: 'p-1', reason: 'RAIL_REJECTED' });
    expect(outcomes.at(-1)).toEqual({
      outcome: 'REJECTED',
      submissionId: 's-1',
      reason: 'rail declined the transfer',
      railReceipt: receiptOf('s-1'),
    });
  });

  it.each<[string, Record<string, unknown>, string | undefined]>([
    ['without its receipt', { outcome: 'REJECTED', submissionId: 's-1' }, 's-1'],
    [
      'with a receipt that is not a string',
      { outcome: 'REJECTED', submissionId: 's-1', railReceipt: 7 },
      's-1',
    ],
    ['without its submission', { outcome: 'REJECTED', railReceipt: receiptOf('s-1') }, undefined],
  ])('a rail decline %s: quarantined, never FAILED', async (_n, details, submissionId) => {
    const { calls, outcomes, run, ambiguousCount } = harness({
      submit: refuse('VALIDATION_FAILED', 422, details),
    });
    const before = await ambiguousCount();
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'rail-outcome AMBIGUOUS', 'release']);
    expect(outcomes.at(-1)).toEqual({
      outcome: 'AMBIGUOUS',
      reason: 'rail decline without its receipt',
      ...(submissionId === undefined ? {} : { submissionId }),
    });
    expect(await ambiguousCount()).toBe(before + 1);
  });

  it.each([
    ['a 422 that is not a decline', refuse('VALIDATION_FAILED', 422, { outcome: 'ACKED' })],
    ['a VALIDATION_FAILED of another status', refuse('VALIDATION_FAILED', 409)],
    ['an unknown code', refuse('INTERNAL', 500)],
  ])('%s is not a rail outcome: nothing recorded, left for a later pass', async (_n, submit) => {
    const { calls, outcomes, run } = harness({ submit });
    const result = await run();
    expect(result).toMatchObject({ kind: 'abandoned', payoutId: 'p-1' });
    expect((result as { reason: string }).reason).toMatch(/^error-(VALIDATION_FAILED|INTERNAL)$/);
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'release']);
    expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED']);
  });

  it('a non-contract error from the submit is an unexpected error, nothing recorded', async () => {
    const { run } = harness({ submit: () => Promise.reject(new TypeError('boom')) });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'error-unexpected' });
  });

  it('DUPLICATE_SUBMISSION: resolved from the proxy record, not submitted again', async () => {
    const { calls, posts, run } = harness({
      submit: refuse('DUPLICATE_SUBMISSION', 409, { submissionId: 's-0' }),
      records: [proxyRecord({ submissionId: 's-0', railReference: 'rr-0', presentedToken: 41n })],
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(effects(calls)).toEqual([
      ...UP_TO_SUBMIT,
      'records',
      'rail-outcome ACKED',
      'post',
      'release',
    ]);
    expect(posts).toEqual([
      { submissionId: 's-0', railReference: 'rr-0', railReceipt: receiptOf('s-0') },
    ]);
  });

  it('DUPLICATE_SUBMISSION with no live record: given up, never a second submit', async () => {
    const { calls, run } = harness({ submit: refuse('DUPLICATE_SUBMISSION', 409), records: [] });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'duplicate-without-record',
    });
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'records', 'release']);
  });

  it.each([
    ['rail', { resourceType: 'rail' }, 'rail'],
    ['account', { resourceType: 'account' }, 'account'],
    ['no details', undefined, 'account'],
  ])('FENCED_OUT at the %s is terminal for this worker', async (_n, details, where) => {
    const { calls, run } = harness({
      submit: () => Promise.reject(new FencedOutError('stale', { httpStatus: 409, details })),
    });
    expect(await run()).toEqual({ kind: 'fenced', payoutId: 'p-1', where });
    expect(effects(calls)).toEqual([...UP_TO_SUBMIT, 'release']);
  });

  it.each<ErrorCode>(['SESSION_EXPIRED', 'SESSION_UNKNOWN', 'LOCK_LOST'])(
    '%s mid-payout: left for a fresh holder',
    async (code) => {
      const { run } = harness({ post: () => Promise.reject(new DlockError(code, 'gone')) });
      expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lock-lost' });
    },
  );

  it('insufficient funds at the claim: FAILED by the claim itself, never reaches the rail', async () => {
    const { calls, run } = harness({
      claim: () => Promise.reject(new DlockError('INSUFFICIENT_FUNDS', 'no funds')),
    });
    expect(await run()).toEqual({ kind: 'failed', payoutId: 'p-1', reason: 'INSUFFICIENT_FUNDS' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'release',
    ]);
  });

  it('a claim refused for another reason is not a skip: the error decides', async () => {
    const { calls, run } = harness({
      claim: () => Promise.reject(new DlockError('UNAVAILABLE', 'down', { httpStatus: 503 })),
    });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'error-UNAVAILABLE',
    });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'release',
    ]);
  });
});

describe('the reasons written for a refusal as invalid', () => {
  const refused = (details: Record<string, unknown> | undefined) => () =>
    Promise.reject(new DlockError('VALIDATION_FAILED', 'invalid', { httpStatus: 400, details }));

  it.each<[Record<string, unknown> | undefined, string]>([
    [undefined, 'VALIDATION_FAILED'],
    [{ fields: 'amount' }, 'VALIDATION_FAILED'],
    [{ fields: [{ field: 'a' }, { field: 3 }, null, 'x'] }, 'VALIDATION_FAILED: a, ?, ?, ?'],
  ])('fields %p are named as %j', async (details, named) => {
    const { outcomes, run } = harness({ submit: refused(details) });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(outcomes.at(-1)).toEqual({
      outcome: 'AMBIGUOUS',
      reason: `rail-proxy refused the submission as invalid (${named}); nothing was presented to the rail`,
    });
  });

  it('a long list is cut to 200 characters, the written reason to 512', async () => {
    const fields = Array.from({ length: 100 }, (_, i) => ({ field: `field${i}` }));
    const { outcomes, run } = harness({ submit: refused({ fields }) });
    await run();
    const reason = String(outcomes.at(-1)?.reason);
    const named = /\((.*)\); nothing/.exec(reason)?.[1] ?? '';
    expect(named).toHaveLength(200);
    expect(reason.length).toBeLessThanOrEqual(512);
  });

  it('a 400 that is not VALIDATION_FAILED is not a refusal as invalid', async () => {
    const { run, service } = harness({
      claim: () => Promise.reject(new DlockError('INVALID_TOKEN', 'bad', { httpStatus: 400 })),
    });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'error-INVALID_TOKEN',
    });
    expect(service.wasRefusedAsInvalid('p-1')).toBe(false);
  });

  it('VALIDATION_FAILED of another status from payment-resource is not remembered as invalid', async () => {
    const { run, service } = harness({
      claim: () => Promise.reject(new DlockError('VALIDATION_FAILED', 'x', { httpStatus: 422 })),
    });
    expect(await run()).toMatchObject({ kind: 'abandoned', reason: 'error-VALIDATION_FAILED' });
    expect(service.wasRefusedAsInvalid('p-1')).toBe(false);
  });
});

describe('stopping, lease discipline and the harness switches', () => {
  it('a stop signal already fired: no claim, abandoned shutting-down', async () => {
    const stop = new AbortController();
    stop.abort();
    const { calls, run } = harness({ stop: stop.signal });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'shutting-down' });
    expect(effects(calls)).toEqual(['acquire payout:a-1 with-signal', 'release']);
  });

  it('an acquire cut short by the stop signal is a shutdown, not a lane failure', async () => {
    const stop = new AbortController();
    const { calls, run } = harness({
      stop: stop.signal,
      acquire: () => {
        stop.abort();
        return Promise.reject(new DlockError('UNAVAILABLE', 'aborted'));
      },
    });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'shutting-down' });
    expect(calls).toEqual(['acquire payout:a-1 with-signal']);
  });

  it.each([
    ['after the claim', 'claim'],
    ['after the SUBMITTED write', 'rail-outcome SUBMITTED'],
  ])('a stop signal fired %s: nothing further goes out', async (_n, last) => {
    const stop = new AbortController();
    const { calls, run } = harness({
      stop: stop.signal,
      claim: () => (last === 'claim' ? (stop.abort(), Promise.resolve()) : Promise.resolve()),
      railOutcome: (o) =>
        o === 'SUBMITTED' ? (stop.abort(), Promise.resolve()) : Promise.resolve(),
    });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'shutting-down' });
    expect(effects(calls).filter((c) => c.startsWith('submit'))).toEqual([]);
    expect(effects(calls).at(-1)).toBe('release');
  });

  it('a lease that cannot cover the submit budget: the payout stays CLAIMED, never submitted', async () => {
    // 10 s lease with the 0.3 margin leaves 7 s; the submit budget is 1 + 8 + 2 = 11 s.
    const { calls, run } = harness({ lockTtlMs: 10_000 });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lease-too-short' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'release',
    ]);
  });

  it('with the harness liveness switch on, no check and no lease rule (negative control)', async () => {
    const { calls, run } = harness({
      lockTtlMs: 10_000,
      lostAtCheck: 1,
      env: { DLOCK_HARNESS: '1', EXECUTOR_SKIP_LIVENESS_CHECK: 'true' },
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(calls.filter((c) => !c.startsWith('at '))).toEqual(HAPPY);
  });

  it('the harness alone does not switch liveness off', async () => {
    const { run } = harness({ lostAtCheck: 1, env: { DLOCK_HARNESS: '1' } });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lock-lost' });
  });
});

describe('the attempt metrics', () => {
  const count = async (metrics: ExecutorMetrics, result: string) =>
    (await metrics.attemptsTotal.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
  const observed = async (metrics: ExecutorMetrics, outcome: string) =>
    (await metrics.executeSeconds.get()).values.find(
      (v) => v.labels.outcome === outcome && v.metricName === 'payout_execute_seconds_count',
    )?.value ?? 0;

  it('a posted payout counts once by result and is timed by outcome', async () => {
    const { metrics, run } = harness();
    const [n, t] = [await count(metrics, 'posted'), await observed(metrics, 'posted')];
    await run();
    expect(await count(metrics, 'posted')).toBe(n + 1);
    expect(await observed(metrics, 'posted')).toBe(t + 1);
  });

  it('an attempt is timed in seconds from acquire to release', async () => {
    const { metrics, run } = harness({
      acquire: () => new Promise((resolve) => setTimeout(resolve, 20)),
    });
    const sum = async () =>
      (await metrics.executeSeconds.get()).values.find(
        (v) => v.labels.outcome === 'posted' && v.metricName === 'payout_execute_seconds_sum',
      )?.value ?? 0;
    const before = await sum();
    await run();
    // At least the 20 ms acquire; far below 5 s with fakes, even on a loaded machine.
    expect(await sum()).toBeGreaterThanOrEqual(before + 0.015);
    expect(await sum()).toBeLessThan(before + 5);
  });

  it('a contended attempt is counted but not timed as an execution', async () => {
    const { metrics, run } = harness({
      acquire: () => Promise.reject(new ContentionError('still contended')),
    });
    const before = (await metrics.executeSeconds.get()).values
      .filter((v) => v.metricName === 'payout_execute_seconds_count')
      .reduce((sum, v) => sum + v.value, 0);
    const n = await count(metrics, 'contended');
    await run();
    expect(await count(metrics, 'contended')).toBe(n + 1);
    const after = (await metrics.executeSeconds.get()).values
      .filter((v) => v.metricName === 'payout_execute_seconds_count')
      .reduce((sum, v) => sum + v.value, 0);
    expect(after).toBe(before);
  });
});

describe('the order of one attempt, as the harness sees it', () => {
  it('check before every side effect; the crash points after the claim, SUBMITTED, the submit and ACKED; the pause before the submit', async () => {
    const { calls, run } = harness();
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(calls).toEqual([
      'acquire payout:a-1 with-signal',
      'check',
      'claim PENDING 42',
      'at after-claim',
      'check',
      'rail-outcome SUBMITTED',
      'at after-submitted',
      'at before-submit',
      'check',
      'submit ben-1',
      'at after-submit',
      'check',
      'rail-outcome ACKED',
      'at after-ack',
      'check',
      'post',
      'release',
    ]);
  });

  it('a payout submitted from its record passes the same points after the submit', async () => {
    const { calls, run } = harness({
      firstClaim: 'not-claimable',
      stateOnReread: 'RAIL_SUBMITTED',
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(calls.slice(calls.indexOf('records'))).toEqual([
      'records',
      'check',
      'rail-outcome SUBMITTED',
      'at after-submitted',
      'at before-submit',
      'check',
      'submit ben-1',
      'at after-submit',
      'check',
      'rail-outcome ACKED',
      'at after-ack',
      'check',
      'post',
      'release',
    ]);
  });

  it(`the longest attempt (${MAX_STEPS_PER_ATTEMPT} calls between acquire and release) completes`, async () => {
    const { calls, run } = harness({
      firstClaim: 'not-claimable',
      stateOnReread: 'CLAIMED',
      submit: () =>
        Promise.reject(
          new DlockError('DUPLICATE_SUBMISSION', 'dup', { httpStatus: 409, details: {} }),
        ),
      records: [proxyRecord({ submissionId: 's-0', railReference: 'rr-0', presentedToken: 41n })],
    });
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    const between = effects(calls).slice(1, -1);
    expect(between).toEqual([
      'claim PENDING 42',
      'get',
      'claim CLAIMED 42',
      'rail-outcome SUBMITTED',
      'submit ben-1',
      'records',
      'rail-outcome ACKED',
      'post',
    ]);
    expect(between).toHaveLength(MAX_STEPS_PER_ATTEMPT);
  });

  it('a stop during the pause before the submit: nothing is submitted', async () => {
    const stop = new AbortController();
    const { calls, run } = harness({
      stop: stop.signal,
      at: (point) => (point === 'before-submit' ? stop.abort() : undefined),
    });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'shutting-down' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'rail-outcome SUBMITTED',
      'release',
    ]);
  });

  it('a lease that runs short during the pause before the submit: left RAIL_SUBMITTED, never submitted', async () => {
    let skewMs = 0;
    const now = performance.now.bind(performance);
    jest.spyOn(performance, 'now').mockImplementation(() => now() + skewMs);
    // 20 s × 0.7 = 14 s of local lease covers the 11 s budget until 5 s pass.
    const { calls, run } = harness({
      at: (point) => {
        if (point === 'before-submit') skewMs = 5_000;
      },
    });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lease-too-short' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'rail-outcome SUBMITTED',
      'release',
    ]);
  });
});

describe('the submit is tried once even when a second try would succeed', () => {
  const once = (first: Error) => {
    let tries = 0;
    return () =>
      ++tries === 1
        ? Promise.reject(first)
        : Promise.resolve({
            submissionId: 's-2',
            railReference: 'rr-2',
            railReceipt: receiptOf('s-2'),
          });
  };

  it('timed out (connected, no answer): abandoned for recovery from the record, never resubmitted', async () => {
    const logs = errorLogs();
    const { calls, run } = harness({
      submit: once(new PeerUnavailableError('rail-proxy', 'response', 'no response in time')),
    });
    expect(await run()).toEqual({
      kind: 'abandoned',
      payoutId: 'p-1',
      reason: 'submit-outcome-unknown',
    });
    expect(effects(calls).filter((c) => c.startsWith('submit'))).toEqual(['submit ben-1']);
    expect(effects(calls).at(-1)).toBe('release');
    expect(logs).toHaveBeenCalledWith(
      { payoutId: 'p-1' },
      'submit outcome unknown (no answer from the proxy: no response in time); left RAIL_SUBMITTED for recovery from the record',
    );
  });

  it('RAIL_AMBIGUOUS (the proxy timed out at the rail): quarantined after one submit', async () => {
    const { calls, outcomes, run } = harness({
      submit: once(new DlockError('RAIL_AMBIGUOUS', 'timeout', { httpStatus: 409 })),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(effects(calls).filter((c) => c.startsWith('submit'))).toEqual(['submit ben-1']);
    expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED', 'AMBIGUOUS']);
  });

  it('no connection or RAIL_UNAVAILABLE: nothing was presented, still not retried in this attempt', async () => {
    for (const first of [
      new PeerUnavailableError('rail-proxy', 'connect', 'refused'),
      new DlockError('RAIL_UNAVAILABLE', 'down', { httpStatus: 503 }),
    ]) {
      const { calls, run } = harness({ submit: once(first) });
      expect(await run()).toMatchObject({ kind: 'abandoned' });
      expect(effects(calls).filter((c) => c.startsWith('submit'))).toEqual(['submit ben-1']);
    }
  });
});

describe('the ACKED write failing for a reason other than a refusal as invalid', () => {
  it.each<[string, Error, Record<string, unknown>]>([
    [
      'payment-resource unavailable',
      new DlockError('UNAVAILABLE', 'down', { httpStatus: 503 }),
      { kind: 'abandoned', reason: 'error-UNAVAILABLE' },
    ],
    [
      'fenced out',
      new FencedOutError('stale', { httpStatus: 409, details: { resourceType: 'account' } }),
      { kind: 'fenced', where: 'account' },
    ],
    [
      'a 422 VALIDATION_FAILED',
      new DlockError('VALIDATION_FAILED', 'x', { httpStatus: 422 }),
      { kind: 'abandoned', reason: 'error-VALIDATION_FAILED' },
    ],
  ])(
    '%s: left RAIL_SUBMITTED for the record to resolve, not quarantined, not posted',
    async (_n, err, result) => {
      const { calls, outcomes, run, ambiguousCount, railAmbiguous } = harness({
        railOutcome: (o) => (o === 'ACKED' ? Promise.reject(err) : Promise.resolve()),
      });
      const before = await ambiguousCount();
      expect(await run()).toEqual({ payoutId: 'p-1', ...result });
      expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED', 'ACKED']);
      expect(effects(calls).slice(-2)).toEqual(['rail-outcome ACKED', 'release']);
      expect(await ambiguousCount()).toBe(before);
      expect(railAmbiguous).not.toHaveBeenCalled();
    },
  );
});

describe('VALIDATION_FAILED from the proxy is a decline only as a 422 with outcome REJECTED', () => {
  const answer = (httpStatus: number) => () =>
    Promise.reject(
      new DlockError('VALIDATION_FAILED', 'x', { httpStatus, details: DECLINE_DETAILS }),
    );

  it.each([409, 500, 200])(
    'outcome REJECTED with a %d: nothing recorded, left for the record',
    async (status) => {
      const { calls, outcomes, run } = harness({ submit: answer(status) });
      expect(await run()).toEqual({
        kind: 'abandoned',
        payoutId: 'p-1',
        reason: 'error-VALIDATION_FAILED',
      });
      expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED']);
      expect(effects(calls).at(-1)).toBe('release');
    },
  );

  it('outcome REJECTED with a 400, receipt and all: a refusal at the door, quarantined, no submission cited, reported', async () => {
    const { outcomes, run, invalidCount, railAmbiguous } = harness({ submit: answer(400) });
    const before = await invalidCount('rail_proxy');
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    const reason =
      'rail-proxy refused the submission as invalid (VALIDATION_FAILED); nothing was presented to the rail';
    expect(outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED', 'AMBIGUOUS']);
    expect(outcomes.at(-1)).toEqual({ outcome: 'AMBIGUOUS', reason });
    expect(railAmbiguous).toHaveBeenCalledWith(
      'rail_ambiguous',
      expect.objectContaining({ submissionId: null, reason }),
    );
    expect(await invalidCount('rail_proxy')).toBe(before + 1);
  });
});

describe('liveness on the other paths', () => {
  const decline = () =>
    Promise.reject(
      new DlockError('VALIDATION_FAILED', 'declined', {
        httpStatus: 422,
        details: DECLINE_DETAILS,
      }),
    );

  it('a check precedes the REJECTED write; a lock lost there writes nothing', async () => {
    const { calls, run } = harness({ submit: decline });
    expect(await run()).toMatchObject({ kind: 'failed' });
    expect(calls[calls.indexOf('rail-outcome REJECTED') - 1]).toBe('check');
    const lost = harness({ submit: decline, lostAtCheck: 4 });
    expect(await lost.run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'lock-lost' });
    expect(lost.outcomes.map((o) => o.outcome)).toEqual(['SUBMITTED']);
  });

  it('recovered from an ACKED record: a check precedes the ACKED write and the post', async () => {
    const records: ProxyRecord[] = [proxyRecord()];
    const opts: Options = { firstClaim: 'not-claimable', stateOnReread: 'RAIL_SUBMITTED', records };
    const { calls, run } = harness(opts);
    expect(await run()).toMatchObject({ kind: 'posted' });
    for (const effect of ['rail-outcome ACKED', 'post']) {
      expect([effect, calls[calls.indexOf(effect) - 1]]).toEqual([effect, 'check']);
    }
    for (const [n, last] of [
      [2, 'records'],
      [3, 'rail-outcome ACKED'],
    ] as const) {
      const lost = harness({ ...opts, lostAtCheck: n });
      expect(await lost.run()).toMatchObject({ reason: 'lock-lost' });
      expect(effects(lost.calls).slice(-2)).toEqual([last, 'release']);
    }
  });

  it('recovered RAIL_ACKED: a check precedes the post; a lock lost there posts nothing', async () => {
    const opts: Options = {
      firstClaim: 'not-claimable',
      stateOnReread: 'RAIL_ACKED',
      view: { submissionId: 's-9', railReference: 'rr-9' },
      records: [proxyRecord()],
    };
    const { calls, run } = harness(opts);
    expect(await run()).toMatchObject({ kind: 'posted' });
    expect(calls[calls.indexOf('post') - 1]).toBe('check');
    const lost = harness({ ...opts, lostAtCheck: 2 });
    expect(await lost.run()).toMatchObject({ reason: 'lock-lost' });
    expect(effects(lost.calls).slice(-2)).toEqual(['records', 'release']);
    expect(lost.posts).toEqual([]);
  });

  it('a stop during the claim: no SUBMITTED write either', async () => {
    const stop = new AbortController();
    const { outcomes, run } = harness({
      stop: stop.signal,
      claim: () => (stop.abort(), Promise.resolve()),
    });
    expect(await run()).toEqual({ kind: 'abandoned', payoutId: 'p-1', reason: 'shutting-down' });
    expect(outcomes).toEqual([]);
  });

  it('a re-read that still shows PENDING after a refused claim: claimed once more, then skipped', async () => {
    const { calls, run } = harness({ firstClaim: 'not-claimable', stateOnReread: 'PENDING' });
    expect(await run()).toEqual({ kind: 'skipped', payoutId: 'p-1', reason: 'not-claimable' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'get',
      'claim PENDING 42',
      'release',
    ]);
  });
});

describe('the release happens once, last, on every other path too', () => {
  const record = proxyRecord;
  const stopped = new AbortController();
  stopped.abort();
  it.each<[string, Options, string]>([
    ['skipped (terminal)', { firstClaim: 'not-claimable', stateOnReread: 'POSTED' }, 'skipped'],
    ['lease too short', { lockTtlMs: 10_000 }, 'abandoned'],
    ['shutting down', { stop: stopped.signal }, 'abandoned'],
    ['refused as invalid', { claim: () => Promise.reject(invalid('expectedState')) }, 'abandoned'],
    [
      'the re-read fails',
      {
        firstClaim: 'not-claimable',
        reread: () => Promise.reject(new DlockError('UNAVAILABLE', 'down', { httpStatus: 503 })),
      },
      'abandoned',
    ],
    [
      'acked, but the proxy record names another submission',
      {
        firstClaim: 'not-claimable',
        stateOnReread: 'RAIL_ACKED',
        view: { submissionId: 's-7', railReference: 'rr-7' },
        records: [record({})],
      },
      'abandoned',
    ],
    [
      'duplicate without a record',
      {
        submit: () =>
          Promise.reject(new DlockError('DUPLICATE_SUBMISSION', 'dup', { httpStatus: 409 })),
      },
      'abandoned',
    ],
    [
      'a quarantine from the record whose write fails',
      {
        firstClaim: 'not-claimable',
        stateOnReread: 'RAIL_SUBMITTED',
        records: [record({ outcome: 'TIMEOUT' })],
        railOutcome: () => Promise.reject(new DlockError('UNAVAILABLE', 'down')),
      },
      'ambiguous',
    ],
    [
      'the SUBMITTED write fails',
      { railOutcome: () => Promise.reject(new DlockError('UNAVAILABLE', 'down')) },
      'abandoned',
    ],
    [
      'the submit throws a non-contract error',
      { submit: () => Promise.reject(new TypeError('x')) },
      'abandoned',
    ],
  ])('%s', async (_name, opts, kind) => {
    const { calls, run } = harness(opts);
    expect(await run()).toMatchObject({ kind, payoutId: 'p-1' });
    expect(calls.filter((c) => c === 'release')).toHaveLength(1);
    expect(calls.at(-1)).toBe('release');
  });
});

describe('what an operator sees', () => {
  const steps = async (metrics: ExecutorMetrics) =>
    Object.fromEntries(
      (await metrics.stepSeconds.get()).values
        .filter((v) => v.metricName === 'executor_step_seconds_count')
        .map((v) => [v.labels.step, v.value]),
    ) as Record<string, number>;

  it('each call of the critical section is timed under its own step label', async () => {
    const h = harness({
      firstClaim: 'not-claimable',
      stateOnReread: 'CLAIMED',
      submit: () =>
        Promise.reject(new DlockError('DUPLICATE_SUBMISSION', 'dup', { httpStatus: 409 })),
      records: [proxyRecord({ submissionId: 's-0', railReference: 'rr-0', presentedToken: 41n })],
    });
    const before = await steps(h.metrics);
    await h.run();
    const after = await steps(h.metrics);
    const delta = Object.fromEntries(
      Object.entries(after).map(([step, n]) => [step, n - (before[step] ?? 0)]),
    );
    expect(delta).toEqual({
      acquire: 1,
      claim: 2,
      reread: 1,
      mark_submitted: 1,
      submit: 1,
      proxy_record: 1,
      record_outcome: 1,
      post: 1,
      release: 1,
    });
  });

  /** The steps one run timed, as counts by label. */
  const timedSteps = async (opts: Options) => {
    const h = harness(opts);
    const before = await steps(h.metrics);
    await h.run();
    const after = await steps(h.metrics);
    return Object.fromEntries(
      Object.entries(after)
        .map(([step, n]) => [step, n - (before[step] ?? 0)])
        .filter(([, n]) => n !== 0),
    );
  };

  it.each<[string, Options]>([
    [
      'a rail decline',
      {
        submit: () =>
          Promise.reject(
            new DlockError('VALIDATION_FAILED', 'declined', {
              httpStatus: 422,
              details: DECLINE_DETAILS,
            }),
          ),
      },
    ],
    [
      'an ambiguous submit',
      {
        submit: () =>
          Promise.reject(new DlockError('RAIL_AMBIGUOUS', 'unknown', { httpStatus: 409 })),
      },
    ],
  ])('%s times its outcome write as record_outcome', async (_name, opts) => {
    expect(await timedSteps(opts)).toEqual({
      acquire: 1,
      claim: 1,
      mark_submitted: 1,
      submit: 1,
      record_outcome: 1,
      release: 1,
    });
  });

  it('a payout posted without a hitch logs no error', async () => {
    const logs = errorLogs();
    const { run } = harness();
    expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
    expect(logs).not.toHaveBeenCalled();
  });

  it('a claim that finds the payout moved on reads the proxy record without a duplicate event', async () => {
    const logs = errorLogs();
    const { run } = harness({
      firstClaim: 'not-claimable',
      stateOnReread: 'RAIL_SUBMITTED',
      records: [proxyRecord({ submissionId: 's-0', railReference: 'rr-0', presentedToken: 41n })],
    });
    await run();
    expect(logs.mock.calls.map(([fields]) => (fields as { event?: string }).event)).not.toContain(
      'executor_duplicate_submission',
    );
  });

  it('a fenced attempt logs where, the token it presented and the highest one seen', async () => {
    const logs = errorLogs();
    const { run } = harness({
      submit: () =>
        Promise.reject(
          new FencedOutError('stale', {
            httpStatus: 409,
            details: { resourceType: 'rail', highestToken: '57' },
          }),
        ),
    });
    expect(await run()).toEqual({ kind: 'fenced', payoutId: 'p-1', where: 'rail' });
    expect(logs).toHaveBeenCalledWith(
      { payoutId: 'p-1', resource: 'rail', presentedToken: '42', highestToken: '57' },
      'fenced out: a newer holder exists; abandoning this payout for this pass, never retrying it',
    );
  });

  it('a lock lost mid-payout is a warning naming the code', async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { run } = harness({ post: () => Promise.reject(new DlockError('LOCK_LOST', 'gone')) });
    await run();
    expect(warnings).toHaveBeenCalledWith(
      { payoutId: 'p-1', code: 'LOCK_LOST' },
      'lock lost mid-payout; left for a fresh holder',
    );
  });

  it('a failed attempt is an error naming the code, and the error', async () => {
    const logs = errorLogs();
    const down = new DlockError('UNAVAILABLE', 'down', { httpStatus: 503 });
    const { run } = harness({ claim: () => Promise.reject(down) });
    await run();
    expect(logs).toHaveBeenCalledWith(
      { payoutId: 'p-1', code: 'UNAVAILABLE', err: down },
      'payout attempt failed; left for a later pass',
    );
  });

  it('a lease too short for the submit is a warning with what is left and what is needed', async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { run } = harness({ lockTtlMs: 10_000 });
    await run();
    expect(warnings).toHaveBeenCalledWith(
      { payoutId: 'p-1', remainingMs: expect.any(Number), requiredMs: 11_000 },
      'lease cannot cover the submit budget; releasing for a holder with a fresh token',
    );
  });

  it('a DUPLICATE_SUBMISSION is the executor_duplicate_submission event, with the presented token', async () => {
    const logs = errorLogs();
    const { run } = harness({
      submit: () =>
        Promise.reject(
          new DlockError('DUPLICATE_SUBMISSION', 'dup', {
            httpStatus: 409,
            details: { submissionId: 's-0' },
          }),
        ),
    });
    await run();
    expect(logs).toHaveBeenCalledWith(
      {
        event: 'executor_duplicate_submission',
        payoutId: 'p-1',
        presentedToken: '42',
        details: { submissionId: 's-0' },
      },
      'proxy refused a second submission for this payout; resolving from its record',
    );
    expect(logs).toHaveBeenCalledWith(
      { payoutId: 'p-1' },
      'DUPLICATE_SUBMISSION but no live record',
    );
  });

  it('a refusal as invalid is the payout_invalid event, naming hop, step and fields, then rail_ambiguous', async () => {
    const logs = errorLogs();
    const { run, railAmbiguous } = harness({
      submit: () => Promise.reject(invalid('beneficiaryRef')),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(railAmbiguous).toHaveBeenCalledWith('rail_ambiguous', {
      payoutId: 'p-1',
      accountId: 'a-1',
      submissionId: null,
      presentedToken: '42',
      ownerId: 'exec-test',
      reason:
        'rail-proxy refused the submission as invalid (VALIDATION_FAILED: beneficiaryRef); nothing was presented to the rail',
      source: 'executor',
    });
    expect(logs).toHaveBeenCalledWith(
      {
        event: 'payout_invalid',
        payoutId: 'p-1',
        accountId: 'a-1',
        hop: 'rail_proxy',
        step: 'submit',
        fields: [{ field: 'beneficiaryRef', message: 'is not valid' }],
      },
      "rail_proxy refused the payout's submit request as invalid; it is not retried",
    );
  });

  it('an ACKED write refused as invalid: payout_invalid at payment_resource record_outcome, then rail_ambiguous', async () => {
    const logs = errorLogs();
    const { run, railAmbiguous } = harness({
      railOutcome: (o) =>
        o === 'ACKED' ? Promise.reject(invalid('railReference')) : Promise.resolve(),
    });
    expect(await run()).toEqual({ kind: 'ambiguous', payoutId: 'p-1' });
    expect(logs).toHaveBeenCalledWith(
      expect.objectContaining({
        event: 'payout_invalid',
        hop: 'payment_resource',
        step: 'record_outcome',
      }),
      expect.any(String),
    );
    expect(railAmbiguous).toHaveBeenCalledWith('rail_ambiguous', {
      payoutId: 'p-1',
      accountId: 'a-1',
      submissionId: null,
      presentedToken: '42',
      ownerId: 'exec-test',
      reason: 'payment-resource refused the ACKED outcome as invalid',
      source: 'executor',
    });
  });

  it('rail_ambiguous carries the proxy submission, and a reason over 512 characters is cut when written', async () => {
    const long = 'x'.repeat(600);
    const { outcomes, run, railAmbiguous } = harness({
      submit: () =>
        Promise.reject(
          new DlockError('RAIL_AMBIGUOUS', 'unknown', {
            httpStatus: 409,
            details: { submissionId: 's-1', reason: long },
          }),
        ),
    });
    await run();
    expect(railAmbiguous).toHaveBeenCalledWith(
      'rail_ambiguous',
      expect.objectContaining({ submissionId: 's-1', reason: `proxy: ${long}` }),
    );
    expect(outcomes.at(-1)).toEqual({
      outcome: 'AMBIGUOUS',
      submissionId: 's-1',
      reason: `proxy: ${long}`.slice(0, 512),
    });
  });

  it('RAIL_ACKED without a receipted rail record is reported at error level', async () => {
    const logs = errorLogs();
    const { run } = harness({
      firstClaim: 'not-claimable',
      stateOnReread: 'RAIL_ACKED',
      view: { submissionId: 's-7', railReference: 'rr-7' },
      records: [proxyRecord()],
    });
    await run();
    expect(logs).toHaveBeenCalledWith(
      { payoutId: 'p-1' },
      'RAIL_ACKED payout without a receipted rail record: an operator must read it',
    );
  });
});
