import { http, metricSum, scrapeMetrics, sleep } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { INSTANT, LockApi, TRACE_ID, UUID } from '../support/lock-client';

describe.each(BACKENDS)('sessions L1-L3 [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start({ LOCK_SESSION_TTL_MAX_MS: '30000' });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('L1 opens a session with the owner from the body and the default TTL', async () => {
    const res = await http('POST', `${server.url}/v1/sessions`, { body: { ownerId: 'worker-1' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      sessionId: UUID,
      ownerId: 'worker-1',
      ttlMillis: 15000,
      expiresAt: INSTANT,
    });
    const remaining = Date.parse(res.body.expiresAt) - Date.now();
    expect(remaining).toBeGreaterThan(13_000);
    expect(remaining).toBeLessThanOrEqual(16_000);
  });

  it('L1 takes the owner from X-Owner-Id and clamps the TTL down to the configured ceiling', async () => {
    const res = await http('POST', `${server.url}/v1/sessions`, {
      headers: { 'x-owner-id': 'worker-2' },
      body: { ttlMillis: 60000 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      sessionId: UUID,
      ownerId: 'worker-2',
      ttlMillis: 30000,
      expiresAt: INSTANT,
    });
  });

  it.each([
    ['no owner at all', {}, {}],
    ['owner over 64 chars', { ownerId: 'x'.repeat(65) }, {}],
    ['empty owner', { ownerId: '' }, {}],
    ['ttl below 1000', { ownerId: 'w', ttlMillis: 999 }, {}],
    ['ttl above 60000', { ownerId: 'w', ttlMillis: 60001 }, {}],
    ['ttl as a string', { ownerId: 'w', ttlMillis: '5000' }, {}],
    ['ttl not an integer', { ownerId: 'w', ttlMillis: 1500.5 }, {}],
    ['an unknown field', { ownerId: 'w', colour: 'red' }, {}],
    ['body and header disagree', { ownerId: 'a' }, { 'x-owner-id': 'b' }],
    ['header owner over 64 chars', {}, { 'x-owner-id': 'y'.repeat(65) }],
  ])('L1 rejects %s with 400 VALIDATION_FAILED', async (_name, body, headers) => {
    const res = await http('POST', `${server.url}/v1/sessions`, { body, headers });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: {
        fields: expect.arrayContaining([expect.objectContaining({ field: expect.any(String) })]),
      },
      traceId: TRACE_ID,
    });
  });

  it('L2 extends the session and counts its live locks', async () => {
    const sessionId = await api.session('hb-owner', 5000);
    await api.acquire('hb:1', sessionId, 'hb-owner');
    await api.acquire('hb:2', sessionId, 'hb-owner');
    const res = await api.heartbeat(sessionId, 'hb-owner');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      sessionId,
      expiresAt: INSTANT,
      serverTime: INSTANT,
      heldLockCount: 2,
    });
    // The session runs for its 5 s TTL from the heartbeat: never more. Under etcd the
    // expiry counts from when the keep-alive was sent and serverTime from when etcd
    // answered, so the span is short by that round trip (tens of ms on a loaded machine).
    const ahead = Date.parse(res.body.expiresAt) - Date.parse(res.body.serverTime);
    expect(ahead).toBeGreaterThanOrEqual(4_750);
    expect(ahead).toBeLessThanOrEqual(5_010);
  });

  it('L2 answers 404 SESSION_UNKNOWN for an id never issued', async () => {
    const res = await api.heartbeat('6f1c2a8e-3d4b-4c5a-9e8f-0a1b2c3d4e5f');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      code: 'SESSION_UNKNOWN',
      message: 'no such session',
      retrySafe: false,
      traceId: TRACE_ID,
    });
  });

  it('L2 answers 410 SESSION_EXPIRED once the heartbeat lapsed', async () => {
    const sessionId = await api.session('slow', 1000);
    await sleep(1_300);
    const res = await api.heartbeat(sessionId, 'slow');
    expect(res.status).toBe(410);
    expect(res.body).toEqual({
      code: 'SESSION_EXPIRED',
      message: 'session expired; its locks were released',
      retrySafe: false,
      details: { state: 'EXPIRED' },
      traceId: TRACE_ID,
    });
    // Closing an expired session changes nothing: 204, and it stays EXPIRED.
    expect((await api.closeSession(sessionId, 'slow')).status).toBe(204);
    expect((await api.heartbeat(sessionId, 'slow')).body.details).toEqual({ state: 'EXPIRED' });
  });

  it('L2 and L3 reject a malformed session id and a missing X-Owner-Id with 400', async () => {
    for (const res of [
      await http('POST', `${server.url}/v1/sessions/not-a-uuid/heartbeat`, {
        headers: { 'x-owner-id': 'o' },
      }),
      await http('DELETE', `${server.url}/v1/sessions/not-a-uuid`, {
        headers: { 'x-owner-id': 'o' },
      }),
      await http('POST', `${server.url}/v1/sessions/${await api.session('o')}/heartbeat`),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [expect.objectContaining({ field: expect.any(String) })] },
        traceId: TRACE_ID,
      });
    }
  });

  it('L3 answers 204 with no body and releases every lock of the session', async () => {
    const a = await api.session('closer');
    const b = await api.session('next');
    const g1 = await api.acquire('close:1', a, 'closer');
    const g2 = await api.acquire('close:2', a, 'closer');
    expect([g1.status, g2.status]).toEqual([200, 200]);
    const res = await api.closeSession(a, 'closer');
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    for (const [key, grant] of [
      ['close:1', g1],
      ['close:2', g2],
    ] as const) {
      expect((await api.inspect(key)).body).toEqual({ key, held: false, waiterCount: 0 });
      const next = await api.acquire(key, b, 'next');
      expect(next.status).toBe(200);
      expect(BigInt(next.body.fencingToken)).toBeGreaterThan(BigInt(grant.body.fencingToken));
    }
  });

  it('a closed session answers CLOSED (410 SESSION_EXPIRED, details.state) to L2, L3 and L4 while retained', async () => {
    const closedBefore = metricSum(await scrapeMetrics(server.url), 'lock_server_sessions', {
      state: 'closed',
    });
    const a = await api.session('closer-2');
    expect((await api.closeSession(a, 'closer-2')).status).toBe(204);
    const closed = {
      code: 'SESSION_EXPIRED',
      message: 'session closed; its locks were released',
      retrySafe: false,
      details: { state: 'CLOSED' },
      traceId: TRACE_ID,
    };
    for (const res of [
      await api.heartbeat(a, 'closer-2'),
      await api.closeSession(a, 'closer-2'),
      await api.acquire('close:3', a, 'closer-2'),
    ]) {
      expect([res.status, res.body]).toEqual([410, closed]);
    }
    const metrics = await scrapeMetrics(server.url);
    expect(metricSum(metrics, 'lock_server_sessions', { state: 'closed' })).toBe(closedBefore + 1);
  });

  it('lists a live session ACTIVE, SUSPECT once a heartbeat is overdue, ACTIVE again after one', async () => {
    const TTL_MS = 6_000;
    const sessionId = await api.session('suspect-owner', TTL_MS);
    const stateOf = async () => {
      const res = await http('GET', `${server.url}/v1/sessions?limit=500`);
      expect(res.status).toBe(200);
      const found = (res.body.sessions as { sessionId: string; state: string }[]).find(
        (s) => s.sessionId === sessionId,
      );
      return found?.state;
    };
    expect(await stateOf()).toBe('ACTIVE');
    // SUSPECT under half the TTL left: 4.1 s in, under 2 s remain (etcd counts whole seconds).
    await sleep(4_100);
    expect(await stateOf()).toBe('SUSPECT');
    const suspect = metricSum(await scrapeMetrics(server.url), 'lock_server_sessions', {
      state: 'suspect',
    });
    expect(suspect).toBeGreaterThanOrEqual(1);
    expect((await api.heartbeat(sessionId, 'suspect-owner')).status).toBe(200);
    expect(await stateOf()).toBe('ACTIVE');
  });
});
