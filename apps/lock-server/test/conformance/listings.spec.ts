import { LockServerReadClient } from '@dlock/lock-client';
import { SafetyEventsClient } from '@dlock/observability';
import { http, sleep, testTokenProvider } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TOKEN, TRACE_ID } from '../support/lock-client';

const TTL_MS = 20_000;
const LONG_TTL_MS = 60_000;

/** A lease or TTL read back: an integer, positive, never more than it was granted. */
const remainingOf = (ttlMs: number) => ({
  asymmetricMatch: (v: unknown) =>
    typeof v === 'number' && Number.isSafeInteger(v) && v > 0 && v <= ttlMs,
  toString: () => `an integer in 1..${ttlMs}`,
});

describe.each(BACKENDS)('console listings GET /v1/locks, GET /v1/sessions [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start();
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  const locks = (query = '') => http('GET', `${server.url}/v1/locks${query}`);
  const sessions = (query = '') => http('GET', `${server.url}/v1/sessions${query}`);

  it('lists nothing on an empty backend', async () => {
    const [l, s] = [await locks(), await sessions()];
    expect([l.status, s.status]).toEqual([200, 200]);
    expect(l.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(l.body).toEqual({ locks: [], truncated: false });
    expect(s.body).toEqual({ sessions: [], truncated: false });
  });

  it('lists held locks by key with owner, session, token and lease left; freed ones are gone', async () => {
    const a = await api.session('owner-a', TTL_MS);
    const b = await api.session('owner-b', TTL_MS);
    const grants: Record<string, { body: Record<string, string> }> = {};
    for (const [key, sid, owner] of [
      ['list:b', a, 'owner-a'],
      ['list:a', a, 'owner-a'],
      ['list:c', b, 'owner-b'],
      ['list:released', b, 'owner-b'],
      ['list:revoked', b, 'owner-b'],
    ] as const) {
      grants[key] = await api.acquire(key, sid, owner, { ttlMillis: TTL_MS });
      expect(grants[key].body.fencingToken).toEqual(TOKEN);
    }
    const released = grants['list:released'].body.fencingToken;
    expect((await api.release('list:released', b, released, 'owner-b')).status).toBe(204);
    const revoke = await api.revoke('list:revoked', { operator: 'ops', reason: 'listing test' });
    expect(revoke.status).toBe(200);

    const res = await locks();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      locks: [
        {
          key: 'list:a',
          ownerId: 'owner-a',
          sessionId: a,
          token: grants['list:a'].body.fencingToken,
          leaseRemainingMillis: remainingOf(TTL_MS),
        },
        {
          key: 'list:b',
          ownerId: 'owner-a',
          sessionId: a,
          token: grants['list:b'].body.fencingToken,
          leaseRemainingMillis: remainingOf(TTL_MS),
        },
        {
          key: 'list:c',
          ownerId: 'owner-b',
          sessionId: b,
          token: grants['list:c'].body.fencingToken,
          leaseRemainingMillis: remainingOf(TTL_MS),
        },
      ],
      truncated: false,
    });

    const page = await locks('?limit=2');
    expect(page.status).toBe(200);
    expect(page.body.truncated).toBe(true);
    expect(page.body.locks.map((l: { key: string }) => l.key)).toEqual(['list:a', 'list:b']);
    expect((await locks('?limit=3')).body.truncated).toBe(false);

    // A closed session's locks are free at once, so they leave the listing.
    expect((await api.closeSession(a, 'owner-a')).status).toBe(204);
    expect((await locks()).body.locks.map((l: { key: string }) => l.key)).toEqual(['list:c']);
    expect((await api.closeSession(b, 'owner-b')).status).toBe(204);
    expect((await locks()).body).toEqual({ locks: [], truncated: false });
  });

  it('lists more locks than one etcd transaction may check, in key order', async () => {
    // Session and leases outlive seventy acquires on a starved machine.
    const sid = await api.session('owner-many', LONG_TTL_MS);
    try {
      const keys = Array.from({ length: 70 }, (_, i) => `many:${String(i).padStart(2, '0')}`);
      const grants = await Promise.all(
        keys.map((k) => api.acquireForFixture(k, sid, 'owner-many', { ttlMillis: LONG_TTL_MS })),
      );
      expect(grants.map((g) => g.status)).toEqual(keys.map(() => 200));
      const all = await locks('?limit=500');
      expect(all.body.truncated).toBe(false);
      expect(all.body.locks.map((l: { key: string }) => l.key)).toEqual(keys);
      expect(all.body.locks.map((l: { token: string }) => l.token)).toEqual(
        grants.map((g) => g.body.fencingToken),
      );
      const page = await locks('?limit=65');
      expect(page.body.locks).toEqual(all.body.locks.slice(0, 65).map(() => expect.anything()));
      expect(page.body.truncated).toBe(true);
    } finally {
      // Also after a failure: the next tests list every live session and lock.
      expect((await api.closeSession(sid, 'owner-many')).status).toBe(204);
    }
  });

  it('lists live sessions by id with owner, TTL, TTL left and live locks held', async () => {
    const x = await api.session('owner-x', TTL_MS);
    const y = await api.session('owner-y', TTL_MS);
    const short = await api.session('owner-short', 1_000);
    await api.acquire('sess:1', x, 'owner-x');
    await api.acquire('sess:2', x, 'owner-x');
    const gone = await api.acquire('sess:3', y, 'owner-y');
    await api.release('sess:3', y, gone.body.fencingToken, 'owner-y');
    await sleep(2_100); // `short` lapses (etcd counts its lease in whole seconds)

    const res = await sessions();
    expect(res.status).toBe(200);
    const expected = [
      {
        sessionId: x,
        ownerId: 'owner-x',
        state: 'ACTIVE',
        ttlMillis: TTL_MS,
        ttlRemainingMillis: remainingOf(TTL_MS),
        locksHeld: 2,
      },
      {
        sessionId: y,
        ownerId: 'owner-y',
        state: 'ACTIVE',
        ttlMillis: TTL_MS,
        ttlRemainingMillis: remainingOf(TTL_MS),
        locksHeld: 0,
      },
    ].sort((p, q) => (p.sessionId < q.sessionId ? -1 : 1));
    expect(res.body).toEqual({ sessions: expected, truncated: false });
    expect(res.body.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(short);

    // The last heartbeat was ttlMillis - ttlRemainingMillis ago: a heartbeat brings it near 0.
    expect((await api.heartbeat(x, 'owner-x')).status).toBe(200);
    const after = (await sessions()).body.sessions.find(
      (s: { sessionId: string }) => s.sessionId === x,
    );
    expect(after.ttlMillis - after.ttlRemainingMillis).toBeLessThan(2_000);

    const page = await sessions('?limit=1');
    expect(page.body).toEqual({ sessions: [expected[0]], truncated: true });

    await api.closeSession(x, 'owner-x');
    await api.closeSession(y, 'owner-y');
    expect((await sessions()).body).toEqual({ sessions: [], truncated: false });
  });

  it.each([
    ['zero', '?limit=0'],
    ['above 500', '?limit=501'],
    ['not a number', '?limit=abc'],
    ['exponent form', '?limit=1e2'],
    ['a decimal point', '?limit=10.0'],
    ['a leading zero', '?limit=010'],
    ['negative', '?limit=-1'],
    ['empty', '?limit='],
    ['given twice', '?limit=1&limit=2'],
    ['an unknown parameter', '?cursor=x'],
  ])('rejects a limit that is %s with 400 VALIDATION_FAILED on both listings', async (_name, q) => {
    for (const res of [await locks(q), await sessions(q)]) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [{ field: expect.any(String), message: expect.any(String) }] },
        traceId: TRACE_ID,
      });
    }
  });

  it('refuses an unauthenticated listing with 401', async () => {
    for (const path of ['/v1/locks', '/v1/sessions']) {
      const res = await http('GET', `${server.url}${path}`, { noAuth: true });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('UNAUTHENTICATED');
    }
  });

  it('serves its lock_revoked safety event at GET /v1/safety-events', async () => {
    const s = await api.session('owner-r', TTL_MS);
    const grant = await api.acquire('events:r', s, 'owner-r');
    const revoke = await api.revoke('events:r', { operator: 'ops', reason: 'feed test' });
    expect(revoke.status).toBe(200);
    const res = await http('GET', `${server.url}/v1/safety-events?after=0&limit=500`);
    expect(res.status).toBe(200);
    expect(res.body.service).toBe('lock-server');
    const event = res.body.events.find(
      (e: { event: string; fields: { key?: string } }) =>
        e.event === 'lock_revoked' && e.fields.key === 'events:r',
    );
    expect(event).toMatchObject({
      seq: expect.any(Number),
      at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      fields: expect.objectContaining({ revokedToken: grant.body.fencingToken }),
    });
    expect(res.body.nextAfter).toBe(res.body.events.at(-1).seq);
    await api.closeSession(s, 'owner-r');
  });

  it('reads the same listings and feed through the typed clients the console uses', async () => {
    const sid = await api.session('owner-client', TTL_MS);
    const grant = await api.acquire('client:1', sid, 'owner-client');
    const token = testTokenProvider('console', 'lock-server');
    const reads = new LockServerReadClient(server.url, token);
    const feed = new SafetyEventsClient('lock-server', server.url, token);
    try {
      expect(await reads.locks(10)).toEqual({
        locks: [
          {
            key: 'client:1',
            ownerId: 'owner-client',
            sessionId: sid,
            token: grant.body.fencingToken,
            leaseRemainingMillis: remainingOf(15_000),
          },
        ],
        truncated: false,
      });
      const { sessions: listed } = await reads.sessions(10);
      expect(listed).toEqual([expect.objectContaining({ sessionId: sid, locksHeld: 1 })]);
      const page = await feed.after(0, 500);
      expect(page.service).toBe('lock-server');
      expect((await feed.after(page.nextAfter, 10)).events).toEqual([]);
    } finally {
      reads.close();
      feed.close();
      await api.closeSession(sid, 'owner-client');
    }
  });
});
