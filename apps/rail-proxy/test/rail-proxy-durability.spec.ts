import { railClientRef } from '@dlock/payout-contract';
import path from 'node:path';
import {
  REPO_ROOT,
  TcpProxy,
  refusingPort,
  http,
  migratedDatabase,
  sleep,
  waitFor,
  withClient,
  type RunningApp,
  testAuthEnv,
  runNode,
  type NodeRun,
  scrapeSeries,
} from '@dlock/testing';
import {
  ISO,
  TRACE,
  UUID,
  highWater,
  idempotencyRows,
  keyOf,
  newPayout,
  rowsOf,
  startProxy,
  startStub,
  stubStats,
  submit,
  transfersFor,
} from './rail-fixtures';

/** Runs rail-proxy expecting it to refuse to start; returns its exit code and output. */
async function refusedStart(env: Record<string, string>): Promise<NodeRun> {
  const main = path.join(REPO_ROOT, 'dist/apps/rail-proxy/main.js');
  return runNode(main, [], { PORT: '0', ...(await testAuthEnv()), ...env }, 15_000);
}

describe('rail-proxy: a durable, shared high-water mark and intent-before-forward', () => {
  let db: string;
  let stub: RunningApp;
  let tcp: TcpProxy;
  const apps: RunningApp[] = [];
  const track = (app: RunningApp) => (apps.push(app), app);
  /**
   * A proxy to the rail that no test faults, pauses or kills: the tests that only need one
   * running share it (an app start is seconds of CPU on a loaded machine).
   */
  let steady: RunningApp | undefined;
  const steadyProxy = async () => (steady ??= track(await startProxy(db, stub.url)));

  beforeAll(async () => {
    db = await migratedDatabase('proxydb');
    stub = await startStub();
    tcp = await TcpProxy.start({ target: { port: stub.port } });
  });
  afterAll(async () => {
    for (const app of apps) await app.stop();
    await tcp?.close();
    await stub?.stop();
  });

  it('two replicas share one mark, and a restarted proxy still fences the stale writer', async () => {
    const [a, b] = await Promise.all([
      startProxy(db, stub.url).then(track),
      startProxy(db, stub.url).then(track),
    ]);
    const first = newPayout();
    const second = newPayout(first.accountId);
    expect((await submit(a.url, first, '30')).status).toBe(200);
    const before = await stubStats(stub.url);

    const viaOther = await submit(b.url, second, '25', { ownerId: 'stale' });
    expect(viaOther.status).toBe(409);
    expect(viaOther.body.details).toEqual({
      presentedToken: '25',
      highestToken: '30',
      resourceType: 'rail',
      resourceId: first.accountId,
      ownerId: 'stale',
    });

    await a.kill();
    await b.kill();
    // Started after both replicas died, whatever ran before: a restart, then the steady proxy.
    const restarted = track(await startProxy(db, stub.url));
    steady ??= restarted;
    const afterRestart = await submit(restarted.url, second, '29');
    expect(afterRestart.status).toBe(409);
    expect(afterRestart.body.code).toBe('FENCED_OUT');
    expect(afterRestart.body.details.highestToken).toBe('30');
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);

    const legit = await submit(restarted.url, second, '31');
    expect(legit.status).toBe(200);
    expect(await highWater(db, first.accountId)).toBe('31');
  });

  it('rail down before forwarding: 503 RAIL_UNAVAILABLE, no intent, no mark, and the same request later succeeds', async () => {
    const closedPort = await refusingPort();
    const down = track(await startProxy(db, `http://127.0.0.1:${closedPort}`));
    const p = newPayout();
    const res = await submit(down.url, p, '40');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      code: 'RAIL_UNAVAILABLE',
      message: expect.any(String),
      retrySafe: true,
      retryAfterMillis: 1000,
      details: { reason: 'rail-unreachable', cause: 'ECONNREFUSED' },
      traceId: TRACE,
    });
    expect(await rowsOf(db, p.payoutId)).toEqual([]);
    expect(await idempotencyRows(db, keyOf(p))).toBe(0);
    expect(await highWater(db, p.accountId)).toBeNull();
    expect(
      await scrapeSeries(down.url, 'rail_submission_total{outcome="unavailable"}', 'throw'),
    ).toBe(1);

    // Retry-safe means it: the identical request, same token, is admitted once the rail is back.
    const up = await steadyProxy();
    const retry = await submit(up.url, p, '40');
    expect(retry.status).toBe(200);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(1);
  });

  it('a proxy killed between intent and forward leaves the row unresolved; nothing reached the rail; nobody resubmits', async () => {
    const paused = await startProxy(db, stub.url, {
      DLOCK_HARNESS: '1',
      RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: '20000',
    });
    const p = newPayout();
    const before = await stubStats(stub.url);
    const inflight = submit(paused.url, p, '50').then(
      () => 'answered',
      () => 'no answer',
    );
    await waitFor(async () => (await rowsOf(db, p.payoutId)).length === 1, 10_000, 'intent row');
    await paused.kill();
    expect(await inflight).toBe('no answer');
    await sleep(200);

    const rows = await rowsOf(db, p.payoutId);
    expect(rows.map((r) => [r.outcome, r.resolved_at])).toEqual([[null, null]]);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);

    const survivor = await steadyProxy();
    const r2 = await http('GET', `${survivor.url}/v1/rail/submissions/${p.payoutId}`);
    expect(r2.status).toBe(200);
    expect(r2.body.submissions).toEqual([
      expect.objectContaining({
        submissionId: rows[0].submission_id,
        presentedToken: '50',
        outcome: null,
        resolvedAt: null,
      }),
    ]);
    const later = await submit(survivor.url, p, '51', { ownerId: 'later-holder' });
    expect(later.status).toBe(409);
    expect(later.body.code).toBe('DUPLICATE_SUBMISSION');
    expect(later.body.details).toEqual({
      payoutId: p.payoutId,
      existingSubmissionId: rows[0].submission_id,
      existingOutcome: null,
      existingPresentedToken: '50',
    });
    // The dead request's exact retry: its original never ended, so the answer is ambiguity.
    const retry = await submit(survivor.url, p, '50');
    expect(retry.status).toBe(409);
    expect(retry.body.code).toBe('RAIL_AMBIGUOUS');
    expect(retry.body.details).toEqual({
      payoutId: p.payoutId,
      submissionId: null,
      outcome: null,
      reason: 'original-attempt-unresolved',
    });
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
    expect((await rowsOf(db, p.payoutId)).map((r) => r.outcome)).toEqual([null]);
  });

  it('through a TCP proxy: a blackholed rail is ambiguous even though nothing arrived; latency alone is harmless', async () => {
    const proxied = track(await startProxy(db, tcp.url));
    const ok = newPayout();
    expect((await submit(proxied.url, ok, '5')).status).toBe(200);

    tcp.setFault({ kind: 'blackhole' });
    const before = await stubStats(stub.url);
    const lost = newPayout();
    const res = await submit(proxied.url, lost, '5');
    expect(res.status).toBe(409);
    expect(res.body.details).toEqual({
      payoutId: lost.payoutId,
      submissionId: UUID,
      outcome: 'TIMEOUT',
      reason: 'read-timeout',
    });
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);

    tcp.setFault({ kind: 'latency', ms: 50 });
    const slow = newPayout();
    expect((await submit(proxied.url, slow, '5')).status).toBe(200);
    tcp.setFault({ kind: 'none' });
  });

  it('the rail closes the connection before a byte is written: the intent is kept as WITHDRAWN, blocks nobody and shows in R2', async () => {
    // The pause holds the proxy between committing the intent and writing the request,
    // long enough for the TCP proxy to end the open connection under it.
    const paused = track(
      await startProxy(db, tcp.url, {
        DLOCK_HARNESS: '1',
        RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: '1500',
      }),
    );
    const p = newPayout();
    const before = await stubStats(stub.url);
    const pending = submit(paused.url, p, '70', { ownerId: 'first-holder' });
    await waitFor(async () => (await rowsOf(db, p.payoutId)).length === 1, 10_000, 'intent row');
    tcp.setFault({ kind: 'drop' });
    tcp.setFault({ kind: 'none' });
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      code: 'RAIL_UNAVAILABLE',
      message: 'the rail was not reached; nothing was presented',
      retrySafe: true,
      retryAfterMillis: 1000,
      details: {
        reason: 'connection-closed-before-write',
        cause: 'connection-closed-before-write',
      },
      traceId: TRACE,
    });
    const [withdrawn] = await rowsOf(db, p.payoutId);
    expect(withdrawn).toMatchObject({
      outcome: 'WITHDRAWN',
      error_code: 'CONNECTION_CLOSED_BEFORE_WRITE',
      rail_reference: null,
      presented_token: '70',
    });
    expect(withdrawn.resolved_at).toBeInstanceOf(Date);
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
    expect(await idempotencyRows(db, keyOf(p))).toBe(0);

    // The next holder is not blocked by it and pays once.
    const direct = await steadyProxy();
    const next = await submit(direct.url, p, '71', { ownerId: 'next-holder' });
    expect(next.status).toBe(200);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(1);

    const r2 = await http('GET', `${direct.url}/v1/rail/submissions/${p.payoutId}`);
    expect(r2.status).toBe(200);
    const common = {
      payoutId: p.payoutId,
      accountId: p.accountId,
      clientRef: railClientRef(p.payoutId),
      amountMinor: p.amountMinor,
      currency: 'EUR',
    };
    expect(r2.body).toEqual({
      payoutId: p.payoutId,
      submissions: [
        {
          ...common,
          submissionId: withdrawn.submission_id,
          presentedToken: '70',
          ownerId: 'first-holder',
          outcome: 'WITHDRAWN',
          railReference: null,
          errorCode: 'CONNECTION_CLOSED_BEFORE_WRITE',
          submittedAt: ISO,
          resolvedAt: ISO,
          railReceipt: null,
        },
        {
          ...common,
          submissionId: next.body.submissionId,
          presentedToken: '71',
          ownerId: 'next-holder',
          outcome: 'ACKED',
          railReference: next.body.railReference,
          errorCode: null,
          submittedAt: next.body.submittedAt,
          resolvedAt: next.body.resolvedAt,
          railReceipt: next.body.railReceipt,
        },
      ],
    });
    // The withdrawn record cannot be taken back by anyone, even with SQL.
    await expect(
      withClient(db, (c) =>
        c.query(`DELETE FROM rail_submission WHERE submission_id = $1`, [withdrawn.submission_id]),
      ),
    ).rejects.toThrow('rail_submission rows are never removed: DELETE refused');
    expect(await rowsOf(db, p.payoutId)).toHaveLength(2);
  });

  it('the kill switch and the test hook are refused outside the harness', async () => {
    const base = { PROXYDB_URL: db, RAIL_STUB_URL: stub.url };
    const fencingOff = await refusedStart({ ...base, RAIL_PROXY_FENCING_ENABLED: 'false' });
    expect(fencingOff.code).toBe(1);
    expect(fencingOff.out).toContain('RAIL_PROXY_FENCING_ENABLED');
    const hook = await refusedStart({ ...base, RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: '10' });
    expect(hook.code).toBe(1);
    expect(hook.out).toContain('RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS');
    const badTimeout = await refusedStart({ ...base, RAIL_READ_TIMEOUT_MS: 'soon' });
    expect(badTimeout.code).toBe(1);
    expect(badTimeout.out).toContain('RAIL_READ_TIMEOUT_MS');
  });

  it('negative control (harness only): with fencing off a stale worker re-presents the payout and the rail pays twice', async () => {
    const unfenced = track(
      await startProxy(db, stub.url, { DLOCK_HARNESS: '1', RAIL_PROXY_FENCING_ENABLED: 'false' }),
    );
    const p = newPayout();
    expect((await submit(unfenced.url, p, '60', { ownerId: 'new-holder' })).status).toBe(200);
    const stale = await submit(unfenced.url, p, '59', { ownerId: 'stale-holder' });
    expect(stale.status).toBe(200);
    expect(await transfersFor(stub.url, railClientRef(p.payoutId))).toHaveLength(2);
    const rows = await rowsOf(db, p.payoutId);
    expect(rows.map((r) => [r.outcome, r.fencing_enforced])).toEqual([
      ['ACKED', false],
      ['ACKED', false],
    ]);
    expect(await highWater(db, p.accountId)).toBe('60');
    expect(unfenced.output()).toContain('fencing_disabled');
    // The detective signal the DlockTokenRegression alert watches (docs/operations.md).
    expect(
      await scrapeSeries(unfenced.url, 'lock_token_regression_total{guard="rail-proxy"}', 'throw'),
    ).toBe(1);
    expect(unfenced.output()).toMatch(
      /"presentedToken":"59".*"event":"token_regression"|"event":"token_regression".*"presentedToken":"59"/,
    );
  });
});
