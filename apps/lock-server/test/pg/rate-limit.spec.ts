import { http } from '@dlock/testing';
import { pgBackend } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/**
 * Requests are limited per caller identity (LOCK_RATE_LIMIT per
 * LOCK_RATE_WINDOW_MS, docs/security.md); a release never is. A window of a
 * minute keeps the test free of wall-clock races.
 */
describe('lock-server: per-identity request limit', () => {
  const LIMIT = 6;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await pgBackend.start({
      LOCK_RATE_LIMIT: String(LIMIT),
      LOCK_RATE_WINDOW_MS: '60000',
      LOCK_WAIT_POLL_MS: '50',
    });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('past the limit: 429 CONTENTION_EXCEEDED with retryAfterMillis; others unaffected; release still works', async () => {
    const session = await api.session('busy'); // 1
    const grant = await api.acquire('busy:1', session, 'busy'); // 2
    expect(grant.status).toBe(200);
    for (let i = 3; i <= LIMIT; i++) {
      expect(
        (await http('GET', `${server.url}/v1/locks/busy:1`, { headers: { 'x-owner-id': 'busy' } }))
          .status,
      ).toBe(200);
    }
    const refused = await api.acquire('busy:2', session, 'busy');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      code: 'CONTENTION_EXCEEDED',
      message: 'request rate limit of this identity exceeded',
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details: { reason: 'rate-limit', limit: LIMIT, windowMs: 60000 },
      traceId: TRACE_ID,
    });
    expect(refused.body.retryAfterMillis).toBeGreaterThan(0);
    expect(refused.body.retryAfterMillis).toBeLessThanOrEqual(60_000);
    // Nothing was done: busy:2 was never granted.
    expect((await http('GET', `${server.url}/v1/locks/busy:2`)).status).toBe(404);
    // Another identity has its own budget.
    const other = await api.session('calm');
    expect((await api.acquire('calm:1', other, 'calm')).status).toBe(200);
    // Giving the lock back is never limited, nor is closing the session.
    const released = await api.release(
      'busy:1',
      session,
      grant.body.fencingToken as string,
      'busy',
    );
    expect(released.status).toBe(204);
    expect((await api.closeSession(session, 'busy')).status).toBe(204);
  });

  it('probes and scrapes are never limited: readiness answers 200 after many of them', async () => {
    // Without an identity these used to share one bucket: a scraper could fail the readiness probe.
    // (/openapi.json is served by serveHttpApp, outside Nest's guards, and not in-process.)
    const open = ['/metrics', '/health/live', '/health/ready'];
    for (let i = 0; i < 25; i++) {
      const res = await http('GET', `${server.url}${open[i % open.length]}`, { noAuth: true });
      expect({ i, status: res.status }).toEqual({ i, status: 200 });
    }
    const ready = await http('GET', `${server.url}/health/ready`, { noAuth: true });
    expect(ready.status).toBe(200);
    // Nor do they eat into an identity's budget.
    const session = await api.session('scraped');
    expect((await api.acquire('scraped:1', session, 'scraped')).status).toBe(200);
  });

  it('heartbeats are never limited nor counted; an acquire past the limit is refused', async () => {
    const beat = async () => (await api.heartbeat(session, 'beat')).status;
    const session = await api.session('beat'); // 1
    const grant = await api.acquire('beat:1', session, 'beat'); // 2
    expect(grant.status).toBe(200);
    for (let i = 0; i < 2 * LIMIT; i++)
      expect({ i, status: await beat() }).toEqual({ i, status: 200 });
    // The heartbeats took nothing from the budget: the rest of it is still there.
    for (let i = 3; i <= LIMIT; i++) {
      const read = await http('GET', `${server.url}/v1/locks/beat:1`, {
        headers: { 'x-owner-id': 'beat' },
      });
      expect({ i, status: read.status }).toEqual({ i, status: 200 });
    }
    expect((await api.acquire('beat:2', session, 'beat')).status).toBe(429);
    for (let i = 0; i < LIMIT; i++) expect({ i, status: await beat() }).toEqual({ i, status: 200 });
    const token = grant.body.fencingToken as string;
    expect((await api.release('beat:1', session, token, 'beat')).status).toBe(204);
  });

  it("a wait is charged per re-try: a long wait spends the caller's budget and ends in 429 before its deadline", async () => {
    const holder = await api.session('holds'); // holds: 1
    expect((await api.acquire('charged:1', holder, 'holds')).status).toBe(200); // holds: 2
    const session = await api.session('patient'); // patient: 1
    const started = performance.now();
    // One request that asks to wait 20 s; each re-try every 50 ms costs one more.
    const res = await api.acquire('charged:1', session, 'patient', { waitMillis: 20_000 });
    const elapsedMs = performance.now() - started;
    expect({ status: res.status, body: res.body }).toEqual({
      status: 429,
      body: {
        code: 'CONTENTION_EXCEEDED',
        message: 'request rate limit of this identity exceeded',
        retrySafe: true,
        retryAfterMillis: expect.any(Number),
        details: { reason: 'rate-limit', limit: LIMIT, windowMs: 60000 },
        traceId: TRACE_ID,
      },
    });
    expect(elapsedMs).toBeLessThan(10_000);
    // The budget is spent: the next request is refused before it runs.
    const next = await api.acquire('charged:2', session, 'patient');
    expect([next.status, next.body.details?.reason]).toEqual([429, 'rate-limit']);
    expect((await http('GET', `${server.url}/v1/locks/charged:2`)).status).toBe(404);
  });
});
