import { sleep, waitFor, type RunningApp } from '@dlock/testing';
import {
  ledgerRows,
  metric,
  payoutState,
  seedAccount,
  seedPayout,
  startExecutor,
  startProxy,
  startServices,
  submissions,
  waitForState,
  type Services,
} from './support';

/**
 * Recovery by state across real processes: an executor SIGKILLs itself at
 * each step boundary (harness-only EXECUTOR_CRASH_AT), and a second executor
 * completes what it left. Then a proxy killed between its intent commit and
 * the rail (an unresolved record) is quarantined, never resubmitted; and a
 * stopped lock-server lets no payout proceed (fail closed).
 */
jest.setTimeout(90_000);

let s: Services;

beforeAll(async () => {
  s = await startServices();
});

afterAll(async () => {
  await s?.stop();
});

function exited(app: RunningApp): Promise<NodeJS.Signals | null> {
  if (app.proc.exitCode !== null || app.proc.signalCode !== null) {
    return Promise.resolve(app.proc.signalCode);
  }
  return new Promise((resolve) => app.proc.once('exit', (_code, signal) => resolve(signal)));
}

test('a worker killed at each step boundary leaves payouts a second worker completes', async () => {
  const points = [
    { at: 'after-claim', state: 'CLAIMED', records: [] as string[] },
    { at: 'after-submitted', state: 'RAIL_SUBMITTED', records: [] },
    { at: 'after-submit', state: 'RAIL_SUBMITTED', records: ['ACKED'] },
    { at: 'after-ack', state: 'RAIL_ACKED', records: ['ACKED'] },
  ];
  const accounts = await Promise.all(points.map(() => seedAccount(s.paydb)));
  const doomed = await Promise.all(
    points.map((p, i) =>
      startExecutor(s, `doomed-${i}`, {
        DLOCK_HARNESS: '1',
        EXECUTOR_CRASH_AT: p.at,
        EXECUTOR_ACCOUNT_ID: accounts[i],
      }),
    ),
  );
  // Seeded only once every worker listens, so each dies mid-payout and not during boot.
  const payouts = await Promise.all(accounts.map((a) => seedPayout(s.paydb, a)));
  const signals = await Promise.all(doomed.map(exited));
  expect(signals).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL', 'SIGKILL']);
  for (const [i, p] of points.entries()) {
    expect([p.at, await payoutState(s.paydb, payouts[i])]).toEqual([p.at, p.state]);
    expect([p.at, (await submissions(s.proxydb, payouts[i])).map((r) => r.outcome)]).toEqual([
      p.at,
      p.records,
    ]);
  }
  const survivor = await startExecutor(s, 'survivor');
  try {
    // The dead workers' sessions (3 s TTL) expire, then the survivor recovers each by its state.
    for (const id of payouts) await waitForState(s.paydb, id, ['POSTED'], 20_000);
    for (const id of payouts) {
      expect(await ledgerRows(s.paydb, id)).toBe(2);
      expect((await submissions(s.proxydb, id)).map((r) => r.outcome)).toEqual(['ACKED']);
    }
    expect(await metric(s.proxy.url, 'rail_duplicate_attempted_total')).toBe(0);
  } finally {
    await survivor.stop();
  }
});

test('a submission the proxy never resolved is quarantined, never resubmitted', async () => {
  const account = await seedAccount(s.paydb);
  // A second proxy on the same proxydb that commits the intent, then waits before the rail.
  const pausing = await startProxy(s.proxydb, s.stub.url, {
    DLOCK_HARNESS: '1',
    RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: '5000',
  });
  const worker = await startExecutor({ ...s, proxy: pausing }, 'unlucky', {
    DLOCK_HARNESS: '1',
    EXECUTOR_ACCOUNT_ID: account,
  });
  const payoutId = await seedPayout(s.paydb, account);
  try {
    await waitFor(
      async () => (await submissions(s.proxydb, payoutId)).length === 1,
      10_000,
      'the intent row',
    );
    await pausing.kill(); // the proxy dies between its intent commit and the rail
    await waitFor(
      async () =>
        (await metric(worker.url, 'executor_payout_attempts_total', {
          result: 'abandoned_submit_outcome_unknown',
        })) >= 1,
      10_000,
      'the worker to give up on an unknown outcome',
    );
  } finally {
    await worker.stop();
  }
  expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_SUBMITTED');
  expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual([null]);
  const survivor = await startExecutor(s, 'survivor-2');
  try {
    await waitForState(s.paydb, payoutId, ['RAIL_AMBIGUOUS']);
    await sleep(1_000);
    expect(await payoutState(s.paydb, payoutId)).toBe('RAIL_AMBIGUOUS');
    expect((await submissions(s.proxydb, payoutId)).map((r) => r.outcome)).toEqual([null]);
    expect(await metric(survivor.url, 'rail_ambiguous_total')).toBe(1);
  } finally {
    await survivor.stop();
  }
});

test('fail closed: with the lock-server stopped no payout proceeds and the backlog grows', async () => {
  const worker = await startExecutor(s, 'closed');
  try {
    await waitFor(async () => (await fetch(`${worker.url}/health/ready`)).ok, 10_000, 'a session');
    s.lockServer.pause();
    const account = await seedAccount(s.paydb);
    const payoutId = await seedPayout(s.paydb, account);
    // Session TTL 3 s × (1 − 0.3): the worker declares the session lost after ~2.1 s.
    await waitFor(
      async () => (await metric(worker.url, 'lock_session_lost_total')) >= 1,
      10_000,
      'session_lost',
    );
    // The backlog ages while nothing proceeds: a deadline, not a guess at how long that takes.
    await waitFor(
      async () => (await metric(worker.url, 'payout_backlog_age_seconds')) > 1,
      10_000,
      'the backlog to age past 1 s',
    );
    expect(await payoutState(s.paydb, payoutId)).toBe('PENDING');
    expect((await fetch(`${worker.url}/health/ready`)).status).toBe(503);
    s.lockServer.resume();
    await waitForState(s.paydb, payoutId, ['POSTED']);
  } finally {
    s.lockServer.resume();
    await worker.stop();
  }
});
