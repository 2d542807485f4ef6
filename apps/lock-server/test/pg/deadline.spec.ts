import { http } from '@dlock/testing';
import { pgBackend } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/** A server-side wait far longer than the caller's budget below. */
const WAIT_MS = 10_000;

describe("lock-server: the caller's deadline (X-Request-Deadline-Ms)", () => {
  let server: RunningLockServer;
  let api: LockApi;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    server = await pgBackend.start();
    api = new LockApi(server.url);
    alice = await api.session('alice', 30_000);
    bob = await api.session('bob', 30_000);
  });
  afterAll(() => server.stop());

  function acquire(key: string, sessionId: string, ownerId: string, deadline: string, body = {}) {
    return http('POST', `${server.url}/v1/locks/${key}/acquire`, {
      headers: { 'x-owner-id': ownerId, 'x-request-deadline-ms': deadline },
      body: { sessionId, ttlMillis: 5_000, ...body },
    });
  }

  it('a waiting acquire gives up while its caller still listens, not after waitMillis', async () => {
    expect((await api.acquire('held', alice, 'alice', { ttlMillis: 20_000 })).status).toBe(200);
    const started = performance.now();
    const res = await acquire('held', bob, 'bob', '1000', { waitMillis: WAIT_MS });
    const elapsedMs = performance.now() - started;
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'LOCK_CONTENDED', retrySafe: true });
    expect(elapsedMs).toBeLessThan(WAIT_MS / 2);
  });

  it('refuses work the caller cannot wait for: 503 UNAVAILABLE retry-safe, no grant', async () => {
    const res = await acquire('never-granted', alice, 'alice', '10');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      code: 'UNAVAILABLE',
      message: expect.any(String),
      retrySafe: true,
      details: { reason: 'deadline-too-short', remainingMs: expect.any(Number), requiredMs: 50 },
      traceId: TRACE_ID,
    });
    // The key was never acquired at all.
    const info = await api.inspect('never-granted');
    expect([info.status, info.body.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('a malformed header is 400 VALIDATION_FAILED and grants nothing', async () => {
    const res = await acquire('malformed', alice, 'alice', '1000ms');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: { fields: [expect.objectContaining({ field: 'X-Request-Deadline-Ms' })] },
    });
    const info = await api.inspect('malformed');
    expect([info.status, info.body.code]).toEqual([404, 'NOT_FOUND']);
  });
});
