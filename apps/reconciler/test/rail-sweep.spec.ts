import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { railClientRef } from '@dlock/payout-contract';
import { LockClient, type LockSession } from '@dlock/lock-client';
import {
  http,
  migratedDatabase,
  readerUrl,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  TcpProxy,
  waitFor,
  type RunningApp,
  testTokenProvider,
  scratchDir,
  scrapeSeries,
} from '@dlock/testing';

/**
 * The detective rail sweep as a real process: payouts driven to POSTED, FAILED
 * and ABANDONED through the real payment-resource under real grants, a real
 * rail stub told to misbehave, and the reconciler reaching the stub through a
 * TCP proxy the test can cut. The sweep must find what the rail disagrees
 * with, once per payout, and wait at its cursor while the rail is down.
 */

const SETTLE_MS = 300;
const TEST_OWNER = 'test-worker';
const FINDINGS = ['rail_double_payment', 'posted_without_transfer', 'paid_but_not_posted'];

let paydb: string;
let proxydb: string;
let lockServer: RunningApp;
let payments: RunningApp;
let stub: RunningApp;
let railLink: TcpProxy;
let reconciler: RunningApp;
let session: LockSession;

function spawnReconciler(): Promise<RunningApp> {
  return spawnApp('reconciler', {
    LOCK_SERVER_URL: lockServer.url,
    PAYMENT_RESOURCE_URL: payments.url,
    RAIL_STUB_URL: railLink.url,
    PAYDB_URL: readerUrl(paydb),
    PROXYDB_URL: readerUrl(proxydb),
    OWNER_ID: 'reconciler-test',
    // Only the sweep is under test: the other loops stay out of the way.
    RECONCILER_INTERVAL_MS: '3600000',
    RECONCILER_CHECK_INTERVAL_MS: '3600000',
    RECONCILER_SWEEP_INTERVAL_MS: '200',
    RECONCILER_SWEEP_SETTLE_MS: String(SETTLE_MS),
    // Re-check rounds run often, so "once per payout" is tested against repeated look-ups.
    RECONCILER_SWEEP_RECHECK_INTERVAL_MS: '1000',
  });
}

beforeAll(async () => {
  let lockdb: string;
  [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { PAYDB_URL: paydb }),
    spawnApp('rail-stub', {
      RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('sweep-stub-'), 'j.jsonl'),
      RAIL_STUB_JOURNAL_FSYNC: 'false',
    }),
  ]);
  railLink = await TcpProxy.start({ target: { port: stub.port } });
  reconciler = await spawnReconciler();
  session = await new LockClient({
    baseUrl: lockServer.url,
    ownerId: TEST_OWNER,
    token: testTokenProvider(TEST_OWNER),
  }).openSession();
}, 60_000);

afterAll(async () => {
  await session?.close();
  await Promise.all([reconciler, payments, stub, lockServer].map((app) => app?.stop()));
  await railLink?.close();
});

async function write(payoutId: string, op: string, token: bigint, body: unknown) {
  const res = await http('POST', `${payments.url}/v1/payouts/${payoutId}/${op}`, {
    headers: {
      'x-fencing-token': token.toString(),
      'x-owner-id': TEST_OWNER,
      'x-idempotency-key': `payout-${payoutId}`,
    },
    body,
  });
  expect({ op, status: res.status }).toEqual({ op, status: 200 });
}

/** The worker's call to the rail (straight to the stub): the rail reference on a 200, else null. */
async function railSubmit(clientRef: string, amountMinor: number): Promise<string | null> {
  const res = await http('POST', `${stub.url}/submit`, {
    body: { clientRef, amountMinor, currency: 'EUR' },
  });
  return res.status === 200 ? (res.body as { railReference: string }).railReference : null;
}

async function script(fates: string[]) {
  const res = await http('POST', `${stub.url}/admin/faults`, { body: { script: fates } });
  expect(res.status).toBe(200);
}

async function railReferences(payoutId: string): Promise<string[]> {
  const res = await http('GET', `${stub.url}/lookup?clientRef=${railClientRef(payoutId)}`);
  return (res.body.transfers as { railReference: string }[]).map((t) => t.railReference);
}

/**
 * A worker's whole path under a real grant: P2, P6 SUBMITTED, `onRail`, then
 * P6 ACKED + P3 (POSTED) when it yields a rail reference, else P6 REJECTED (FAILED).
 */
async function executed(
  onRail: (clientRef: string, amountMinor: number) => Promise<string | null>,
): Promise<string> {
  const accountId = await seedFundedAccount(paydb, 100_000);
  const payoutId = await seedPendingPayout(paydb, accountId, 2_500);
  const submissionId = randomUUID();
  const lock = await session.acquire(`payout:${accountId}`);
  const token = lock.fencingToken;
  try {
    await write(payoutId, 'claim', token, { expectedState: 'PENDING' });
    await write(payoutId, 'rail-outcome', token, { outcome: 'SUBMITTED', submissionId });
    const railReference = await onRail(railClientRef(payoutId), 2_500);
    if (railReference === null) {
      await write(payoutId, 'rail-outcome', token, {
        outcome: 'REJECTED',
        submissionId,
        reason: 'declined by the rail',
      });
    } else {
      await write(payoutId, 'rail-outcome', token, {
        outcome: 'ACKED',
        submissionId,
        railReference,
      });
      await write(payoutId, 'post', token, { railReference, submissionId, railOutcome: 'ACKED' });
    }
  } finally {
    await lock.release();
  }
  return payoutId;
}

async function sweep(): Promise<Record<string, any>> {
  const res = await http('GET', `${reconciler.url}/v1/reconciler/report`);
  expect(res.status).toBe(200);
  return res.body.railSweep;
}

const total = (finding: string) =>
  scrapeSeries(
    reconciler.url,
    `reconciler_rail_sweep_findings_total{finding="${finding}"}`,
    'throw',
  );
const open = (finding: string) =>
  scrapeSeries(
    reconciler.url,
    `reconciler_rail_sweep_findings_open{finding="${finding}"}`,
    'throw',
  );

/** Waits until the sweep has looked up `payoutId` and then completed a pass. */
async function sweptPast(payoutId: string): Promise<Record<string, any>> {
  return waitFor(
    async () => {
      const r = await sweep();
      return r.cursor?.payoutId === payoutId && r.lastPass?.status === 'caught_up' ? r : undefined;
    },
    15_000,
    `the sweep to pass ${payoutId}`,
  );
}

function findingOf(finding: string, payoutId: string, state: string, refs: string[]) {
  return {
    finding,
    payoutId,
    clientRef: railClientRef(payoutId),
    state,
    terminalAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
    railReferences: refs,
    detectedAt: expect.any(String),
  };
}

/** The structured log lines of one event. */
function events(event: string): Record<string, unknown>[] {
  return reconciler
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(`"event":"${event}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('reconciler: detective rail sweep over terminal payouts', () => {
  const flagged: { finding: string; payoutId: string }[] = [];

  it('a clean POSTED payout (one transfer) produces no finding', async () => {
    const clean = await executed(railSubmit);
    const r = await sweptPast(clean);
    expect(r.openFindings).toEqual([]);
    expect(r.open).toEqual({
      rail_double_payment: 0,
      posted_without_transfer: 0,
      paid_but_not_posted: 0,
    });
    for (const f of FINDINGS) expect([f, await total(f), await open(f)]).toEqual([f, 0, 0]);
    expect(
      await scrapeSeries(
        reconciler.url,
        'reconciler_rail_sweep_last_completed_timestamp_seconds',
        'throw',
      ),
    ).toBeGreaterThan(0);
  });

  it('a rail that paid twice on its own is found as rail_double_payment, counted once', async () => {
    await script(['ack-duplicate']);
    const twice = await executed(railSubmit);
    const refs = await railReferences(twice);
    expect(refs).toHaveLength(2);
    await waitFor(async () => (await total('rail_double_payment')) === 1, 15_000, 'the finding');
    flagged.push({ finding: 'rail_double_payment', payoutId: twice });
    expect((await sweep()).openFindings).toEqual([
      findingOf('rail_double_payment', twice, 'POSTED', refs),
    ]);
    expect(await open('rail_double_payment')).toBe(1);
    expect(events('rail_double_payment')).toEqual([
      expect.objectContaining({
        payoutId: twice,
        clientRef: railClientRef(twice),
        railReferences: refs,
        state: 'POSTED',
      }),
    ]);
    // Re-check rounds look it up again: still one payout, one count, one log line.
    const lookups = (await sweep()).lookups as number;
    await waitFor(async () => (await sweep()).lookups >= lookups + 4, 15_000, 're-checks');
    expect(await total('rail_double_payment')).toBe(1);
    expect(events('rail_double_payment')).toHaveLength(1);
    // Detection only: the payout is as the worker left it.
    const payout = await http('GET', `${payments.url}/v1/payouts/${twice}`);
    expect(payout.body).toMatchObject({ state: 'POSTED', railReference: refs[0] });
  });

  it('a call the rail answered as declined but booked is found as paid_but_not_posted (FAILED and ABANDONED)', async () => {
    await script(['decline-accepted']);
    const failed = await executed(railSubmit);
    // An abandoned payout the rail paid anyway (a rogue call under its reference).
    const abandoned = await seedPendingPayout(
      paydb,
      await seedFundedAccount(paydb, 100_000),
      2_500,
    );
    expect(await railSubmit(railClientRef(abandoned), 2_500)).toEqual(expect.any(String));
    const res = await http('POST', `${payments.url}/v1/payouts/${abandoned}/abandon`, {
      body: { operator: 'ops-test', reason: 'customer cancelled the payout' },
    });
    expect(res.status).toBe(200);

    await waitFor(async () => (await total('paid_but_not_posted')) === 2, 15_000, 'both findings');
    flagged.push({ finding: 'paid_but_not_posted', payoutId: failed });
    flagged.push({ finding: 'paid_but_not_posted', payoutId: abandoned });
    const found = (await sweep()).openFindings.filter(
      (f: { finding: string }) => f.finding === 'paid_but_not_posted',
    );
    expect(found).toEqual([
      findingOf('paid_but_not_posted', failed, 'FAILED', await railReferences(failed)),
      findingOf('paid_but_not_posted', abandoned, 'ABANDONED', await railReferences(abandoned)),
    ]);
    expect(await open('paid_but_not_posted')).toBe(2);
    expect(events('paid_but_not_posted').map((e) => [e.payoutId, e.state])).toEqual([
      [failed, 'FAILED'],
      [abandoned, 'ABANDONED'],
    ]);
  });

  it('a POSTED payout the rail has no transfer for is found as posted_without_transfer', async () => {
    const phantom = await executed(async () => 'rr-never-booked');
    await waitFor(async () => (await total('posted_without_transfer')) === 1, 15_000, 'finding');
    flagged.push({ finding: 'posted_without_transfer', payoutId: phantom });
    const found = (await sweep()).openFindings.filter(
      (f: { finding: string }) => f.finding === 'posted_without_transfer',
    );
    expect(found).toEqual([findingOf('posted_without_transfer', phantom, 'POSTED', [])]);
    expect(await open('posted_without_transfer')).toBe(1);
    expect(events('posted_without_transfer')).toEqual([
      expect.objectContaining({ payoutId: phantom, railReferences: [], state: 'POSTED' }),
    ]);
  });

  it('a rail that is down pauses the sweep at its cursor; it resumes there when the rail is back', async () => {
    const settled = await executed(railSubmit);
    const before = await sweptPast(settled);
    railLink.setFault({ kind: 'reset' });
    let late: string;
    try {
      await script(['ack-duplicate']);
      late = await executed(railSubmit);
      const pausedPass = async (after: number) =>
        waitFor(
          async () => {
            const r = await sweep();
            return r.lastPass?.status === 'paused' && Date.parse(r.lastPass.startedAt) > after
              ? r
              : undefined;
          },
          15_000,
          'a paused pass',
        );
      const paused = await pausedPass(Date.now());
      const stillPaused = await pausedPass(Date.parse(paused.lastPass.finishedAt));
      // The cursor waits on the last payout looked up; nothing past it was skipped, and no pass
      // counts as completed while a due payout cannot be looked up (the stale-sweep alert).
      for (const r of [paused, stillPaused]) {
        expect(r.cursor).toEqual(before.cursor);
        expect(r.paused).toEqual({ since: expect.any(String), reason: expect.any(String) });
        expect(r.openFindings.map((f: { payoutId: string }) => f.payoutId)).not.toContain(late);
      }
      expect(stillPaused.lastCompletedAt).toBe(paused.lastCompletedAt);
      expect(events('rail_sweep_paused')).toHaveLength(1);
    } finally {
      railLink.setFault({ kind: 'none' });
    }
    const resumed = await sweptPast(late);
    expect(resumed.paused).toBeNull();
    expect(Date.parse(resumed.lastCompletedAt)).toBeGreaterThan(Date.parse(before.lastCompletedAt));
    expect(resumed.openFindings).toContainEqual(
      findingOf('rail_double_payment', late, 'POSTED', await railReferences(late)),
    );
    expect(await total('rail_double_payment')).toBe(2);
    flagged.push({ finding: 'rail_double_payment', payoutId: late });
  });

  it('a restarted reconciler sweeps the look-back again and finds every open finding again', async () => {
    await reconciler.stop();
    reconciler = await spawnReconciler();
    await waitFor(
      async () =>
        (await total('rail_double_payment')) === 2 &&
        (await total('paid_but_not_posted')) === 2 &&
        (await total('posted_without_transfer')) === 1,
      15_000,
      'the findings after a restart',
    );
    const ids = (await sweep()).openFindings.map((f: { finding: string; payoutId: string }) => ({
      finding: f.finding,
      payoutId: f.payoutId,
    }));
    expect(ids).toEqual(expect.arrayContaining(flagged));
    expect(ids).toHaveLength(flagged.length);
    // Ids go to the log line and the report, never into a metric label.
    const metricsText = (await http('GET', `${reconciler.url}/metrics`)).text;
    for (const { payoutId } of flagged) expect(metricsText).not.toContain(payoutId);
  });
});
