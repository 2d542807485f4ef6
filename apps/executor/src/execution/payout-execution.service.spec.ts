import { Registry } from 'prom-client';
import {
  ContentionError,
  DlockError,
  FencedOutError,
  LockLostError,
  type FencingToken,
  type PayoutState,
} from '@dlock/lock-api';
import type { LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import { PeerUnavailableError } from '@dlock/http-client';
import type {
  PaymentResourceClient,
  PayoutSummary,
  PayoutView,
} from '../clients/payment-resource.client';
import type { RailProxyClient } from '../clients/rail-proxy.client';
import { readExecutorConfig } from '../config';
import { ExecutorMetrics } from '../metrics';
import type { ProxyRecord } from './recovery';
import { PayoutExecutionService } from './payout-execution.service';

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

interface Options {
  firstClaim?: 'ok' | 'not-claimable';
  stateOnReread?: PayoutState;
  acquire?: () => Promise<void>;
  claim?: () => Promise<void>;
  submit?: () => Promise<{ submissionId: string; railReference: string }>;
  railOutcome?: (outcome: Outcome, reason?: string) => Promise<void>;
  post?: () => Promise<void>;
  records?: ProxyRecord[];
  /** checkStillHeld throws LockLostError from its n-th call on (1-based). */
  lostAtCheck?: number;
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
  const ok = () => Promise.resolve();
  const payments = {
    claim: async (_id: string, token: FencingToken, expected: 'PENDING' | 'CLAIMED') => {
      calls.push(`claim ${expected} ${token}`);
      if (expected === 'PENDING' && opts.firstClaim === 'not-claimable') {
        throw new DlockError('PAYOUT_NOT_CLAIMABLE', 'moved on');
      }
      await (opts.claim ?? ok)();
      return { payoutId: polled.payoutId, state: 'CLAIMED' };
    },
    get: (): Promise<PayoutView> => {
      calls.push('get');
      return Promise.resolve({
        ...polled,
        state: opts.stateOnReread ?? 'PENDING',
        submissionId: null,
        railReference: null,
      });
    },
    railOutcome: async (
      _id: string,
      _t: FencingToken,
      record: { outcome: Outcome; reason?: string },
    ) => {
      calls.push(`rail-outcome ${record.outcome}`);
      await (opts.railOutcome ?? ok)(record.outcome, record.reason);
      return { payoutId: polled.payoutId, state: 'RAIL_SUBMITTED' };
    },
    post: async () => {
      calls.push('post');
      await (opts.post ?? ok)();
      return { payoutId: polled.payoutId, state: 'POSTED' };
    },
  };
  const rail = {
    submit: (_t: FencingToken, body: { beneficiaryRef: string }) => {
      calls.push(`submit ${body.beneficiaryRef}`);
      return (
        opts.submit ?? (() => Promise.resolve({ submissionId: 's-1', railReference: 'rr-1' }))
      )();
    },
    records: () => {
      calls.push('records');
      return Promise.resolve(opts.records ?? []);
    },
  };
  const now = Date.now();
  let checks = 0;
  const handle = {
    fencingToken: TOKEN,
    ttlMs: 20_000,
    acquiredAt: new Date(now),
    expiresAt: new Date(now + 20_000),
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
  const service = new PayoutExecutionService(
    readExecutorConfig({ OWNER_ID: 'exec-test' }),
    payments as unknown as PaymentResourceClient,
    rail as unknown as RailProxyClient,
    metrics,
    new SafetyEvents(new Registry()),
  );
  const run = (payout: PayoutSummary = polled) =>
    service.execute(session as unknown as LockSession, payout, new AbortController().signal);
  const invalidCount = async (hop: string) =>
    (await metrics.payoutInvalidTotal.get()).values.find((v) => v.labels.hop === hop)?.value ?? 0;
  return { calls, run, service, invalidCount };
}

/** The calls without the liveness checks. */
function effects(calls: string[]): string[] {
  return calls.filter((c) => c !== 'check');
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
  const { calls, run } = harness();
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  expect(effects(calls)).toEqual(HAPPY);
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

describe('acquire', () => {
  it('CONTENTION_EXCEEDED after the retry budget ends the attempt as contended, with no side effect', async () => {
    const { calls, run } = harness({
      acquire: () => Promise.reject(new ContentionError('still contended after 5 attempts')),
    });
    expect(await run()).toEqual({ kind: 'contended', payoutId: 'p-1' });
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
              details: { outcome: 'REJECTED', submissionId: 's-1' },
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
  it('refused by the proxy: FAILED through REJECTED, one submit, counted with hop=rail_proxy', async () => {
    const reasons: (string | undefined)[] = [];
    const { calls, run, invalidCount } = harness({
      submit: () => Promise.reject(invalid('beneficiaryRef')),
      railOutcome: (o, reason) => {
        if (o === 'REJECTED') reasons.push(reason);
        return Promise.resolve();
      },
    });
    const before = await invalidCount('rail_proxy');
    expect(await run()).toEqual({ kind: 'failed', payoutId: 'p-1', reason: 'INVALID_PAYOUT' });
    expect(effects(calls)).toEqual([
      'acquire payout:a-1 with-signal',
      'claim PENDING 42',
      'rail-outcome SUBMITTED',
      'submit ben-1',
      'rail-outcome REJECTED',
      'release',
    ]);
    expect(reasons).toEqual([
      'rail-proxy refused the submission as invalid (VALIDATION_FAILED: beneficiaryRef); nothing was presented to the rail',
    ]);
    expect(await invalidCount('rail_proxy')).toBe(before + 1);
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
