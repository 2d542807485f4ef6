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
});
