import { Registry } from 'prom-client';
import { DlockError, type FencingToken, type PayoutState } from '@dlock/lock-api';
import type { LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import type {
  PaymentResourceClient,
  PayoutSummary,
  PayoutView,
} from '../clients/payment-resource.client';
import type { RailProxyClient } from '../clients/rail-proxy.client';
import { readExecutorConfig } from '../config';
import { ExecutorMetrics } from '../metrics';
import { PayoutExecutionService } from './payout-execution.service';

// The branch a stale poll takes, with fake hops (the real ones are covered by the medium tests).

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

function harness(opts: { firstClaim: 'ok' | 'not-claimable'; stateOnReread: PayoutState }) {
  const calls: string[] = [];
  const payments = {
    claim: (_id: string, token: FencingToken, expected: 'PENDING' | 'CLAIMED') => {
      calls.push(`claim ${expected} ${token}`);
      if (expected === 'PENDING' && opts.firstClaim === 'not-claimable') {
        return Promise.reject(new DlockError('PAYOUT_NOT_CLAIMABLE', 'moved on'));
      }
      return Promise.resolve({ payoutId: polled.payoutId, state: 'CLAIMED' });
    },
    get: (): Promise<PayoutView> => {
      calls.push('get');
      return Promise.resolve({
        ...polled,
        state: opts.stateOnReread,
        submissionId: null,
        railReference: null,
      });
    },
    railOutcome: (_id: string, _t: FencingToken, record: { outcome: string }) => {
      calls.push(`rail-outcome ${record.outcome}`);
      return Promise.resolve({ payoutId: polled.payoutId, state: 'RAIL_SUBMITTED' });
    },
    post: () => {
      calls.push('post');
      return Promise.resolve({ payoutId: polled.payoutId, state: 'POSTED' });
    },
  };
  const rail = {
    submit: (_t: FencingToken, body: { beneficiaryRef: string }) => {
      calls.push(`submit ${body.beneficiaryRef}`);
      return Promise.resolve({ submissionId: 's-1', railReference: 'rr-1' });
    },
  };
  const now = Date.now();
  const session = {
    tryAcquire: () =>
      Promise.resolve({
        fencingToken: TOKEN,
        ttlMs: 20_000,
        acquiredAt: new Date(now),
        expiresAt: new Date(now + 20_000),
        checkStillHeld: () => undefined,
        release: () => {
          calls.push('release');
          return Promise.resolve();
        },
      }),
  };
  const service = new PayoutExecutionService(
    readExecutorConfig({ OWNER_ID: 'exec-test' }),
    payments as unknown as PaymentResourceClient,
    rail as unknown as RailProxyClient,
    new ExecutorMetrics(),
    new SafetyEvents(new Registry()),
  );
  const run = () =>
    service.execute(session as unknown as LockSession, polled, new AbortController().signal);
  return { calls, run };
}

it('claims a polled PENDING payout without reading it first, and submits what the poll carried', async () => {
  const { calls, run } = harness({ firstClaim: 'ok', stateOnReread: 'PENDING' });
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  expect(calls).toEqual([
    'claim PENDING 42',
    'rail-outcome SUBMITTED',
    'submit ben-1',
    'rail-outcome ACKED',
    'post',
    'release',
  ]);
});

it('when the claim finds the payout moved on, reads it and recovers by state (re-claim)', async () => {
  const { calls, run } = harness({ firstClaim: 'not-claimable', stateOnReread: 'CLAIMED' });
  expect(await run()).toEqual({ kind: 'posted', payoutId: 'p-1' });
  expect(calls).toEqual([
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
  expect(calls).toEqual(['claim PENDING 42', 'get', 'release']);
});
