import { LockClient } from '@dlock/lock-client';
import { http, sleep, waitFor, type RunningApp, testTokenProvider } from '@dlock/testing';
import {
  ledgerRows,
  lockHeld,
  metric,
  payoutState,
  scriptStub,
  seedAccount,
  seedPayout,
  startExecutor,
  startServices,
  submissions,
  waitForState,
  type Services,
} from './support';

/**
 * docs/executor.md §5 acceptance 2–6 and 9 against real processes: lock-server (pg),
 * payment-resource, rail-stub, rail-proxy and executor workers, each on its
 * own fresh database. One set of services for the whole file; every scenario
 * uses its own accounts.
 */
jest.setTimeout(60_000);

let s: Services;
let exec: RunningApp;

beforeAll(async () => {
  s = await startServices();
  // A session that outlives the pause of the out-of-band test below (3 s would end under load).
  exec = await startExecutor(s, 'exec-a', { LOCK_SESSION_TTL_MS: '10000' });
});

afterAll(async () => {
  await exec?.stop();
  await s?.stop();
});

test('happy path: POSTED, two ledger rows, one ACKED submission, lock released', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account, 2_500);
  await waitForState(s.paydb, payoutId, ['POSTED']);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);
  const rows = await submissions(s.proxydb, payoutId);
  expect(rows).toEqual([expect.objectContaining({ outcome: 'ACKED', owner_id: 'exec-a' })]);
  await waitFor(async () => !(await lockHeld(s.lockServer.url, account)), 5_000, 'lock release');
  const account2 = await http('GET', `${s.payments.url}/v1/accounts/${account}`);
  expect(account2.body).toEqual(
    expect.objectContaining({ balanceMinor: 1_000_000 - 2_500, ledgerSumMinor: 1_000_000 - 2_500 }),
  );
});

test('rail decline: FAILED, one REJECTED submission, no ledger rows', async () => {
  await scriptStub(s.stub.url, { script: ['decline'] });
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  await waitForState(s.paydb, payoutId, ['FAILED']);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(0);
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['REJECTED']);
});

test('rail timeout: RAIL_AMBIGUOUS, one TIMEOUT row, lock released, and it stays so', async () => {
  // The stub holds the connection past the proxy's 800 ms read timeout.
  await scriptStub(s.stub.url, { script: ['hold'], holdMs: 1_500 });
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account);
  await waitForState(s.paydb, payoutId, ['RAIL_AMBIGUOUS']);
  await waitFor(async () => !(await lockHeld(s.lockServer.url, account)), 5_000, 'lock release');
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['TIMEOUT']);
  // Several passes and recovery polls later (100 ms / 300 ms): nothing touched it again.
  await sleep(1_500);
  expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_AMBIGUOUS');
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual(['TIMEOUT']);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(0);
  expect(await metric(exec.url, 'rail_ambiguous_total')).toBeGreaterThanOrEqual(1);
});

test('two executors on one account: one POSTED per payout, zero fenced writes', async () => {
  const fencedBefore = await metric(s.payments.url, 'lock_fenced_out_total');
  const railFencedBefore = await metric(s.proxy.url, 'lock_fenced_out_total');
  const second = await startExecutor(s, 'exec-b');
  try {
    const account = await seedAccount(s.paydb);
    const payouts: string[] = [];
    for (let i = 0; i < 6; i++) payouts.push(await seedPayout(s.paydb, account, 100 + i));
    for (const id of payouts) await waitForState(s.paydb, id, ['POSTED']);
    for (const id of payouts) {
      expect(await ledgerRows(s.paydb, id)).toBe(2);
      expect((await submissions(s.proxydb, id)).map((r) => r.outcome)).toEqual(['ACKED']);
    }
  } finally {
    await second.stop();
  }
  expect(await metric(s.payments.url, 'lock_fenced_out_total')).toBe(fencedBefore);
  expect(await metric(s.proxy.url, 'lock_fenced_out_total')).toBe(railFencedBefore);
});

test('a fence advanced out of band before the outcome write: abandoned, then completed by a fresh token', async () => {
  await scriptStub(s.stub.url, { latencyMs: 400 });
  const account = await seedAccount(s.paydb);
  const first = await seedPayout(s.paydb, account);
  try {
    await waitForState(s.paydb, first, ['RAIL_SUBMITTED'], 10_000);
    // Held still while the test moves the fence, so it is still before its ACKED write when it
    // goes on: on a loaded machine the rail's 400 ms can pass before the claim below is sent,
    // and the worker would post the first payout and take the second itself.
    exec.pause();
    let claim: Awaited<ReturnType<typeof http>>;
    let second: string;
    try {
      // Another payout of the account, claimed out of band under a newer token (the global sequence).
      second = await seedPayout(s.paydb, account);
      const client = new LockClient({
        baseUrl: s.lockServer.url,
        ownerId: 'out-of-band',
        token: testTokenProvider('out-of-band'),
      });
      const session = await client.openSession();
      const bump = await session.tryAcquire('test:fence-bump');
      expect(bump).not.toBeNull();
      claim = await http('POST', `${s.payments.url}/v1/payouts/${second}/claim`, {
        headers: {
          'x-fencing-token': bump!.fencingToken.toString(),
          'x-owner-id': 'out-of-band',
          'x-idempotency-key': `payout-${second}`,
        },
        body: { expectedState: 'PENDING' },
      });
      await session.close();
    } finally {
      exec.resume();
    }
    expect(claim.status).toBe(200);
    await scriptStub(s.stub.url, { latencyMs: 0 });
    // The executor's ACKED write presents the older token: FENCED_OUT, abandoned for this pass.
    await waitFor(
      async () =>
        (await metric(exec.url, 'payout_execute_seconds_count', { outcome: 'abandoned' })) >= 1,
      10_000,
      'an abandoned outcome',
    );
    expect(
      await metric(exec.url, 'executor_payout_attempts_total', { result: 'fenced_account' }),
    ).toBeGreaterThanOrEqual(1);
    // Recovery by state under a fresh token: the ACKED record is posted, the CLAIMED one re-claimed.
    await waitForState(s.paydb, first, ['POSTED']);
    await waitForState(s.paydb, second, ['POSTED']);
    for (const id of [first, second]) {
      expect(await ledgerRows(s.paydb, id)).toBe(2);
      expect((await submissions(s.proxydb, id)).map((r) => r.outcome)).toEqual(['ACKED']);
    }
  } finally {
    await scriptStub(s.stub.url, { latencyMs: 0 });
  }
});

test('the four outcome labels are exported, and no duplicate submission was ever attempted', async () => {
  for (const outcome of ['posted', 'failed', 'ambiguous', 'abandoned']) {
    expect(
      await metric(exec.url, 'payout_execute_seconds_count', { outcome }),
    ).toBeGreaterThanOrEqual(1);
  }
  expect(await metric(s.proxy.url, 'rail_duplicate_attempted_total')).toBe(0);
  const ready = await http('GET', `${exec.url}/health/ready`);
  expect(ready.status).toBe(200);
});
