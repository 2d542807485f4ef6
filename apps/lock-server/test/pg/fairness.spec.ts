import { migratedDatabase, spawnApp, waitFor, type RunningApp } from '@dlock/testing';
import { LockApi, TRACE_ID } from '../support/lock-client';

const PER_OWNER_MAX = 8;
const TOTAL_MAX = 12;
const FLOOD = 200;
const HELD_KEYS = 4;
const WAIT_MS = 4_000;

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
      LOCK_WAITERS_PER_OWNER_MAX: String(PER_OWNER_MAX),
      LOCK_WAITERS_TOTAL_MAX: String(TOTAL_MAX),
    });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  const refusedBy = (reason: string, waitersMax: number) => ({
    status: 429,
    body: {
      code: 'CONTENTION_EXCEEDED',
      message: expect.any(String),
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details: { reason, waitersMax },
      traceId: TRACE_ID,
    },
  });

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
    const answered: { status: number; body: unknown }[] = [];
    flood.forEach((p) => void p.then((r) => answered.push({ status: r.status, body: r.body })));
    // The excess is refused at once, long before the waiters' deadline.
    await waitFor(async () => answered.length >= FLOOD - PER_OWNER_MAX, WAIT_MS, 'refusals');
    expect(performance.now() - started).toBeLessThan(WAIT_MS);
    expect(answered).toHaveLength(FLOOD - PER_OWNER_MAX);
    for (const r of answered) expect(r).toEqual(refusedBy('waiters-per-owner', PER_OWNER_MAX));

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

    // A second flooder finds only what the total leaves: TOTAL_MAX - PER_OWNER_MAX - 1 (calm's).
    const other = await api.session('flood-2', 30_000);
    const second = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.acquire('flood:1', other, 'flood-2', { waitMillis: 300 }),
      ),
    );
    const totalRefused = second.filter((r) => r.status === 429);
    expect(totalRefused).toHaveLength(10 - (TOTAL_MAX - PER_OWNER_MAX - 1));
    for (const r of totalRefused) {
      expect({ status: r.status, body: r.body }).toEqual(refusedBy('waiters-total', TOTAL_MAX));
    }
    expect(second.filter((r) => r.status === 409)).toHaveLength(TOTAL_MAX - PER_OWNER_MAX - 1);
    expect((await calmWait).body.code).toBe('LOCK_CONTENDED');

    // The flooder's own waiters run to their deadline as usual; nothing was granted to them.
    const waited = (await Promise.all(flood)).filter((r) => r.status !== 429);
    expect(waited.map((r) => r.body.code)).toEqual(Array(PER_OWNER_MAX).fill('LOCK_CONTENDED'));
    for (let i = 0; i < HELD_KEYS; i++) {
      expect((await api.inspect(`flood:${i}`)).body).toMatchObject({
        ownerId: 'flood',
        waiterCount: 0,
      });
    }
  });
});
