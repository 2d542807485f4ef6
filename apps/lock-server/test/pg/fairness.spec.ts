import { migratedDatabase, spawnApp, waitFor, type RunningApp } from '@dlock/testing';
import { LockApi, TRACE_ID } from '../support/lock-client';

const PER_OWNER_MAX = 8;
const TOTAL_MAX = 12;
const FLOOD = 200;
const HELD_KEYS = 4;
/** Long, so that a refusal is told from a waiter even on a loaded machine. */
const WAIT_MS = 15_000;
const SESSIONS_MAX = 3;
const LOCKS_MAX = 5;

/**
 * One identity cannot take the lock-server from the others (docs/lock-server.md,
 * "Limits"): against the built process over real HTTP and PostgreSQL, a flood of
 * waiting acquires by one identity is capped per identity and in all, the excess
 * is refused at once in the contract's envelope, and another identity's
 * heartbeats and acquires keep succeeding while the flood waits.
 */
describe('lock-server process: one identity flooding waiters', () => {
  let server: RunningApp;
  let api: LockApi;

  beforeAll(async () => {
    server = await spawnApp('lock-server', {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: await migratedDatabase('lockdb'),
      // A loaded test machine is slow, not down: no 503 for a slow connect or statement.
      LOCKDB_CONNECT_TIMEOUT_MS: '10000',
      LOCKDB_STATEMENT_TIMEOUT_MS: '10000',
      LOCK_WAITERS_PER_OWNER_MAX: String(PER_OWNER_MAX),
      LOCK_WAITERS_TOTAL_MAX: String(TOTAL_MAX),
      LOCK_SESSIONS_PER_OWNER_MAX: String(SESSIONS_MAX),
      LOCK_LOCKS_PER_OWNER_MAX: String(LOCKS_MAX),
      // The waiter caps alone: the in-flight limit sheds earlier and has its own spec (admission).
      LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: String(FLOOD),
    });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  const refused = (details: Record<string, unknown>) => ({
    status: 429,
    body: {
      code: 'CONTENTION_EXCEEDED',
      message: expect.any(String),
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details,
      traceId: TRACE_ID,
    },
  });
  const refusedBy = (reason: string, waitersMax: number) => refused({ reason, waitersMax });

  it('caps one identity at its waiters, the process at its total; another identity is served meanwhile', async () => {
    // The flooder holds a few keys on one session and waits for them from another.
    const holder = await api.session('flood', 30_000);
    for (let i = 0; i < HELD_KEYS; i++) {
      expect((await api.acquire(`flood:${i}`, holder, 'flood', { ttlMillis: 30_000 })).status).toBe(
        200,
      );
    }
    const waiter = await api.session('flood', 30_000);
    const calm = await api.session('calm', 30_000);
    const started = performance.now();
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      api.acquire(`flood:${i % HELD_KEYS}`, waiter, 'flood', { waitMillis: WAIT_MS }),
    );
    const answered: { status: number; body: any; ms: number }[] = [];
    for (const p of flood) {
      void p.then((r) =>
        answered.push({ status: r.status, body: r.body, ms: performance.now() - started }),
      );
    }
    const refusals = () => answered.filter((r) => r.status === 429);
    // The excess is refused at once, long before the waiters' deadline.
    await waitFor(
      async () => refusals().length >= FLOOD - PER_OWNER_MAX,
      WAIT_MS,
      'refusals',
    ).catch((err: Error) => {
      const seen = answered.map((r) => `${r.status} ${r.body?.code}`);
      throw new Error(`${err.message}; answers so far: ${[...new Set(seen)].join(', ')}`);
    });
    expect(refusals()).toHaveLength(FLOOD - PER_OWNER_MAX);
    for (const { status, body, ms } of refusals()) {
      expect({ status, body }).toEqual(refusedBy('waiters-per-owner', PER_OWNER_MAX));
      expect(ms).toBeLessThan(WAIT_MS);
    }

    // Meanwhile another identity's heartbeats and acquires succeed, and it may still wait.
    for (let i = 0; i < 10; i++) {
      const beat = await api.heartbeat(calm, 'calm');
      expect({ i, status: beat.status }).toEqual({ i, status: 200 });
    }
    expect((await api.acquire('calm:free', calm, 'calm')).status).toBe(200);
    const calmAgain = await api.session('calm', 30_000);
    const calmWait = api.acquire('calm:free', calmAgain, 'calm', { waitMillis: 2_000 });
    await waitFor(
      async () => (await api.inspect('calm:free')).body.waiterCount === 1,
      2_000,
      "calm's waiter",
    );

    // A second flooder finds only the places the total leaves.
    let waiting = 1; // calm's
    for (let i = 0; i < HELD_KEYS; i++)
      waiting += (await api.inspect(`flood:${i}`)).body.waiterCount;
    expect(waiting).toBeLessThanOrEqual(PER_OWNER_MAX + 1);
    const other = await api.session('flood-2', 30_000);
    const second = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.acquire('flood:1', other, 'flood-2', { waitMillis: 300 }),
      ),
    );
    const totalRefused = second.filter((r) => r.status === 429);
    expect(totalRefused).toHaveLength(10 - (TOTAL_MAX - waiting));
    for (const r of totalRefused) {
      expect({ status: r.status, body: r.body }).toEqual(refusedBy('waiters-total', TOTAL_MAX));
    }
    expect((await calmWait).body.code).toBe('LOCK_CONTENDED');

    // The flooder's own waiters run to their deadline as usual; nothing was granted to them.
    const waited = (await Promise.all(flood)).filter((r) => r.status !== 429);
    expect(waited).toHaveLength(PER_OWNER_MAX);
    for (const r of waited) {
      // Contended at the deadline; on a loaded machine a retry-safe 503 is possible, a grant is not.
      expect(r.body.code === 'LOCK_CONTENDED' || (r.status === 503 && r.body.retrySafe)).toBe(true);
    }
    for (let i = 0; i < HELD_KEYS; i++) {
      expect((await api.inspect(`flood:${i}`)).body).toMatchObject({
        ownerId: 'flood',
        waiterCount: 0,
      });
    }
  });

  it('caps the sessions and the locks of one owner; giving one back makes room; others are unaffected', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < SESSIONS_MAX; i++) sessions.push(await api.session('greedy', 30_000));
    const extra = await api.openSession('greedy', 30_000);
    expect({ status: extra.status, body: extra.body }).toEqual(
      refused({ reason: 'sessions-per-owner', sessionsMax: SESSIONS_MAX }),
    );
    // Another identity still opens sessions.
    const modest = await api.session('modest', 30_000);

    const grants = [];
    for (let i = 0; i < LOCKS_MAX; i++) {
      const grant = await api.acquire(`greedy:${i}`, sessions[i % SESSIONS_MAX], 'greedy');
      expect({ i, status: grant.status }).toEqual({ i, status: 200 });
      grants.push(grant);
    }
    const over = await api.acquire('greedy:over', sessions[0], 'greedy');
    expect({ status: over.status, body: over.body }).toEqual(
      refused({ reason: 'locks-per-owner', locksMax: LOCKS_MAX }),
    );
    // Nothing was granted, and another identity may take that very key.
    expect((await api.inspect('greedy:over')).status).toBe(404);
    const taken = await api.acquire('greedy:over', modest, 'modest');
    expect(taken.status).toBe(200);
    expect((await api.release('greedy:over', modest, taken.body.fencingToken)).status).toBe(204);

    // Giving a lock back makes room for one more; closing a session, for another session.
    const first = grants[0].body;
    expect((await api.release('greedy:0', first.sessionId, first.fencingToken)).status).toBe(204);
    expect((await api.acquire('greedy:over', sessions[0], 'greedy')).status).toBe(200);
    expect((await api.closeSession(sessions[2], 'greedy')).status).toBe(204);
    expect((await api.openSession('greedy', 30_000)).status).toBe(201);
  });
});
