import { http, migratedDatabase, type RunningApp } from '@dlock/testing';
import {
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
  type Payout,
} from './rail-fixtures';

/** The proxy's own rail read: without the caller's budget, a slow rail is waited on this long. */
const RAIL_READ_TIMEOUT_MS = 5_000;
/** The stub answers after this: slower than any budget below. */
const RAIL_LATENCY_MS = 6_000;

describe("rail-proxy: the caller's deadline (X-Request-Deadline-Ms) against a slow rail", () => {
  let db: string;
  let stub: RunningApp;
  let proxy: RunningApp;

  beforeAll(async () => {
    db = await migratedDatabase('proxydb');
    stub = await startStub({ RAIL_STUB_LATENCY_MS: String(RAIL_LATENCY_MS) });
    // Own budget (default) 500 + 5000 + 500 ms; shortest rail read (default) 1250 ms.
    proxy = await startProxy(db, stub.url, { RAIL_READ_TIMEOUT_MS: String(RAIL_READ_TIMEOUT_MS) });
  });
  afterAll(async () => {
    await proxy?.stop();
    await stub?.stop();
  });

  async function timedSubmit(p: Payout, token: string, deadlineMs: string) {
    const started = performance.now();
    const res = await http('POST', `${proxy.url}/v1/rail/submissions`, {
      headers: {
        'x-fencing-token': token,
        'x-owner-id': 'worker-1',
        'x-idempotency-key': keyOf(p),
        'x-request-deadline-ms': deadlineMs,
      },
      body: p,
    });
    return { res, elapsedMs: performance.now() - started };
  }

  it('a budget too short for connect + the shortest rail read is refused before the intent: retry-safe, nothing presented', async () => {
    const p = newPayout();
    const before = await stubStats(stub.url);
    const { res } = await timedSubmit(p, '7', '500');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      code: 'RAIL_UNAVAILABLE',
      message: expect.any(String),
      retrySafe: true,
      details: { reason: 'deadline-too-short', remainingMs: expect.any(Number), requiredMs: 1850 },
      traceId: TRACE,
    });
    // No intent, no reservation, no mark: the same token may come back.
    expect(await rowsOf(db, p.payoutId)).toEqual([]);
    expect(await idempotencyRows(db, keyOf(p))).toBe(0);
    expect(await highWater(db, p.accountId)).toBeNull();
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
  });

  it('once admitted, the rail read ends inside the caller budget: an answer (RAIL_AMBIGUOUS) arrives while the caller listens', async () => {
    const p = newPayout();
    const { res, elapsedMs } = await timedSubmit(p, '8', '2500');
    // The rail was called: its silence is ambiguous, never retry-safe.
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'RAIL_AMBIGUOUS',
      message: expect.any(String),
      retrySafe: false,
      details: {
        payoutId: p.payoutId,
        submissionId: UUID,
        outcome: 'TIMEOUT',
        reason: 'read-timeout',
      },
      traceId: TRACE,
    });
    // Far below RAIL_READ_TIMEOUT_MS: the budget (2.5 s less the margin) chose the read timeout.
    expect(elapsedMs).toBeLessThan(3_500);
    expect((await rowsOf(db, p.payoutId)).map((r) => r.outcome)).toEqual(['TIMEOUT']);
  });

  it('a malformed budget is 400 VALIDATION_FAILED and records nothing', async () => {
    const p = newPayout();
    const before = await stubStats(stub.url);
    const { res } = await timedSubmit(p, '9', '2.5s');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'request validation failed',
      retrySafe: false,
      details: {
        fields: [
          {
            field: 'X-Request-Deadline-Ms',
            message: 'must be a positive integer of milliseconds, at most 3600000',
          },
        ],
      },
      traceId: TRACE,
    });
    expect(await rowsOf(db, p.payoutId)).toEqual([]);
    expect(await highWater(db, p.accountId)).toBeNull();
    expect((await stubStats(stub.url)).submitsReceived).toBe(before.submitsReceived);
  });

  it('without a header the proxy waits for the rail up to its own read timeout', async () => {
    const p = newPayout();
    const started = performance.now();
    const res = await submit(proxy.url, p, '10');
    expect(res.status).toBe(409);
    expect(res.body.details.reason).toBe('read-timeout');
    expect(performance.now() - started).toBeGreaterThanOrEqual(RAIL_READ_TIMEOUT_MS - 50);
  });
});
