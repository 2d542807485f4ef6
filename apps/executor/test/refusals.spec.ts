import { randomUUID } from 'node:crypto';
import { LockClient } from '@dlock/lock-client';
import {
  http,
  sleep,
  waitFor,
  withClient,
  type RunningApp,
  testTokenProvider,
} from '@dlock/testing';
import {
  ledgerRows,
  lockHeld,
  metric,
  payoutState,
  seedAccount,
  seedPayout,
  startExecutor,
  startServices,
  startStub,
  stubSubmits,
  submissions,
  waitForState,
  type Services,
} from './support';

/**
 * The branches where a downstream says no, against real processes:
 * lock-server (pg), payment-resource, rail-stub, rail-proxy and one executor
 * per test, started after the test's payouts exist and watching only the
 * test's account (harness knob), so each test sees exactly its own attempts.
 * Most executors here poll the recovery states only once, at boot: after its
 * first attempt a payout is touched again only if the branch under test says so.
 */
jest.setTimeout(90_000);

let s: Services;
const running: RunningApp[] = [];

beforeAll(async () => {
  // A contended acquire waits the lock-server's retryAfterMillis, capped at 1 s by default
  // (docs/lock-server.md, "PostgreSQL backend: design choices"): capped lower here, the held-lock
  // test sees its two attempts of five acquires in a quarter of the time. Only the lock-server
  // reads it, and no other test here contends.
  s = await startServices({ LOCK_CONTENDED_RETRY_AFTER_MAX_MS: '250' });
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.stop()));
});

afterAll(async () => {
  await s?.stop();
});

/** An executor on one account; `once` = recovery polled only at boot (before the test's payout moves). */
async function executorFor(
  account: string,
  owner: string,
  opts: { once?: boolean; env?: Record<string, string> } = {},
): Promise<RunningApp> {
  const app = await startExecutor(s, owner, {
    DLOCK_HARNESS: '1',
    EXECUTOR_ACCOUNT_ID: account,
    ...(opts.once ? { EXECUTOR_RECOVERY_INTERVAL_MS: '600000' } : {}),
    ...opts.env,
  });
  running.push(app);
  return app;
}

async function failureReason(payoutId: string): Promise<string | null> {
  const res = await withClient(s.paydb, (c) =>
    c.query<{ failure_reason: string | null }>(
      `SELECT failure_reason FROM payout WHERE payout_id = $1`,
      [payoutId],
    ),
  );
  return res.rows[0].failure_reason;
}

test('a payout the proxy refuses as invalid is quarantined after one attempt, never failed on the worker’s word; the rail saw nothing', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  // payment-resource stores any beneficiary; the proxy takes printable ASCII only (docs/rail.md).
  await withClient(s.paydb, (c) =>
    c.query(`UPDATE payout SET beneficiary_ref = 'Bénéficiaire' WHERE payout_id = $1`, [payoutId]),
  );
  const stubBefore = await stubSubmits(s.stub.url);
  const exec = await executorFor(account, 'exec-invalid');
  // A door refusal earns no rail receipt: the reconciler ends it FAILED on the rail's record
  // (R3 NOT_FOUND, docs/rail.md "Receipts"), not this worker.
  await waitForState(s.paydb, payoutId, ['RAIL_AMBIGUOUS']);
  // Many passes later (poll 100 ms, recovery 300 ms): still one attempt, one refusal.
  await sleep(1_500);
  expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_AMBIGUOUS');
  expect(await failureReason(payoutId)).toBeNull();
  expect(await metric(exec.url, 'executor_payout_invalid_total', { hop: 'rail_proxy' })).toBe(1);
  expect(await metric(exec.url, 'executor_payout_invalid_total', { hop: 'payment_resource' })).toBe(
    0,
  );
  expect(await metric(exec.url, 'executor_step_seconds_count', { step: 'submit' })).toBe(1);
  expect(await metric(exec.url, 'executor_payout_attempts_total', { result: 'ambiguous' })).toBe(1);
  expect(exec.output()).toContain('payout_invalid');
  expect(await submissions(s.proxydb, payoutId)).toEqual([]);
  expect(await stubSubmits(s.stub.url)).toBe(stubBefore);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(0);
});

test('an account id with a dot is one every service accepts: POSTED end to end', async () => {
  const account = await seedAccount(s.paydb, 1_000_000, `acct.${randomUUID().slice(0, 8)}`);
  const payoutId = await seedPayout(s.paydb, account);
  const exec = await executorFor(account, 'exec-dotted');
  await waitForState(s.paydb, payoutId, ['POSTED']);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['ACKED']);
  expect(await metric(exec.url, 'executor_payout_invalid_total')).toBe(0);
});

test('a lease too short for the submit: released, nothing submitted, then completed by a fresh holder', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  const stubBefore = await stubSubmits(s.stub.url);
  // Lease 10 s × 0.7 = 7 s locally; a 4 s pause leaves < 3.8 s, the submit budget (1 s + 0.8 s + 2 s).
  const slow = await executorFor(account, 'exec-slow', {
    once: true,
    env: { EXECUTOR_PAUSE_BEFORE_SUBMIT_MS: '4000' },
  });
  await waitFor(
    async () =>
      (await metric(slow.url, 'executor_payout_attempts_total', {
        result: 'abandoned_lease_too_short',
      })) === 1,
    20_000,
    'the lease-too-short abandonment',
  );
  expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_SUBMITTED');
  expect(await lockHeld(s.lockServer.url, account)).toBe(false);
  expect(await metric(slow.url, 'executor_step_seconds_count', { step: 'submit' })).toBe(0);
  expect(await submissions(s.proxydb, payoutId)).toEqual([]);
  expect(await stubSubmits(s.stub.url)).toBe(stubBefore);
  await slow.stop();
  // Nothing was presented, so a holder with a fresh lease finds no record and submits once.
  await executorFor(account, 'exec-fresh');
  await waitForState(s.paydb, payoutId, ['POSTED']);
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['ACKED']);
  expect(await stubSubmits(s.stub.url)).toBe(stubBefore + 1);
});

test('RAIL_UNAVAILABLE: nothing presented, no ambiguity, and the payout goes through once the rail is back', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  const stubPort = s.stub.port;
  await s.stub.stop();
  try {
    await railDown(account, payoutId);
  } finally {
    s.stub = await startStub(stubPort);
  }
  // The recovery pass of a fresh holder finds no record and submits: once.
  await executorFor(account, 'exec-after-outage');
  await waitForState(s.paydb, payoutId, ['POSTED']);
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['ACKED']);
  expect(await stubSubmits(s.stub.url)).toBe(1);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);
});

/** One attempt while the rail-stub is down: the proxy answers RAIL_UNAVAILABLE. */
async function railDown(account: string, payoutId: string): Promise<void> {
  const exec = await executorFor(account, 'exec-unavailable', { once: true });
  await waitFor(
    async () =>
      (await metric(exec.url, 'executor_payout_attempts_total', {
        result: 'abandoned_rail_unavailable',
      })) === 1,
    20_000,
    'the rail-unavailable abandonment',
  );
  expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_SUBMITTED');
  expect(await submissions(s.proxydb, payoutId)).toEqual([]);
  expect(await metric(exec.url, 'rail_ambiguous_total')).toBe(0);
  expect(await lockHeld(s.lockServer.url, account)).toBe(false);
  await exec.stop();
}

test('DUPLICATE_SUBMISSION: resolved from the proxy record (R2) and posted, the rail presented once', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account, 1_000);
  const stubBefore = await stubSubmits(s.stub.url);
  const duplicatesBefore = await metric(s.proxy.url, 'rail_duplicate_attempted_total');
  // Someone else already presented this payout through the proxy, under an older token.
  const client = new LockClient({
    baseUrl: s.lockServer.url,
    ownerId: 'out-of-band',
    token: testTokenProvider('out-of-band'),
  });
  const session = await client.openSession();
  const other = await session.tryAcquire(`test:dup-${account}`);
  expect(other).not.toBeNull();
  const direct = await http('POST', `${s.proxy.url}/v1/rail/submissions`, {
    headers: {
      'x-fencing-token': other!.fencingToken.toString(),
      'x-owner-id': 'out-of-band',
      'x-idempotency-key': `payout-${payoutId}`,
    },
    body: {
      payoutId,
      accountId: account,
      amountMinor: 1_000,
      currency: 'EUR',
      beneficiaryRef: `ben-${payoutId.slice(0, 8)}`,
    },
  });
  await session.close();
  expect(direct.status).toBe(200);
  // The executor claims the PENDING payout and submits: the proxy answers DUPLICATE_SUBMISSION.
  const exec = await executorFor(account, 'exec-dup', { once: true });
  await waitForState(s.paydb, payoutId, ['POSTED']);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);
  expect(await submissions(s.proxydb, payoutId)).toEqual([
    expect.objectContaining({ outcome: 'ACKED', owner_id: 'out-of-band' }),
  ]);
  expect(await stubSubmits(s.stub.url)).toBe(stubBefore + 1);
  expect(await metric(s.proxy.url, 'rail_duplicate_attempted_total')).toBe(duplicatesBefore + 1);
  expect(await metric(exec.url, 'executor_step_seconds_count', { step: 'proxy_record' })).toBe(1);
  expect(exec.output()).toContain('executor_duplicate_submission');
});

test('a held account lock: five contended acquires per attempt (the retry budget), no side effect', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  const client = new LockClient({
    baseUrl: s.lockServer.url,
    ownerId: 'holder',
    token: testTokenProvider('holder'),
  });
  const session = await client.openSession();
  try {
    const held = await session.tryAcquire(`payout:${account}`, { ttlMs: 60_000 });
    expect(held).not.toBeNull();
    const contendedBefore = await metric(s.lockServer.url, 'lock_server_acquire_total', {
      result: 'lock_contended',
    });
    const exec = await executorFor(account, 'exec-contended');
    await waitFor(
      async () =>
        (await metric(exec.url, 'executor_payout_attempts_total', { result: 'contended' })) >= 2,
      20_000,
      'two contended attempts',
    );
    // Read in this order: every attempt counted here made its five tries before it was counted.
    const attempts = await metric(exec.url, 'executor_payout_attempts_total', {
      result: 'contended',
    });
    const contended =
      (await metric(s.lockServer.url, 'lock_server_acquire_total', { result: 'lock_contended' })) -
      contendedBefore;
    expect(contended).toBeGreaterThanOrEqual(5 * attempts);
    expect(await payoutState(s.paydb, payoutId)).toBe('PENDING');
    expect(await submissions(s.proxydb, payoutId)).toEqual([]);
    await held!.release();
    await waitForState(s.paydb, payoutId, ['POSTED']);
  } finally {
    await session.close();
  }
});
