import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

const SESSIONS_MAX = 2;
const LOCKS_MAX = 3;

/**
 * Per-owner caps on live sessions and held locks, the same on every backend
 * (docs/lock-server.md, "Limits"); the built process is tested in pg/fairness.spec.ts.
 */
describe.each(BACKENDS)('per-owner caps [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start({
      LOCK_SESSIONS_PER_OWNER_MAX: String(SESSIONS_MAX),
      LOCK_LOCKS_PER_OWNER_MAX: String(LOCKS_MAX),
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

  it('one session and one lock past the caps are 429, nothing opened or granted; a release makes room', async () => {
    const a = await api.session('capped', 30_000);
    const b = await api.session('capped', 30_000);
    const third = await api.openSession('capped', 30_000);
    expect({ status: third.status, body: third.body }).toEqual(
      refused({ reason: 'sessions-per-owner', sessionsMax: SESSIONS_MAX }),
    );
    const grants = [];
    for (let i = 0; i < LOCKS_MAX; i++) {
      const g = await api.acquireForFixture(`capped:${i}`, i % 2 ? b : a, 'capped');
      expect({ i, status: g.status }).toEqual({ i, status: 200 });
      grants.push(g.body);
    }
    const over = await api.acquire('capped:over', a, 'capped');
    expect({ status: over.status, body: over.body }).toEqual(
      refused({ reason: 'locks-per-owner', locksMax: LOCKS_MAX }),
    );
    expect((await api.inspect('capped:over')).status).toBe(404);
    // Another owner is not affected.
    const other = await api.session('uncapped', 30_000);
    expect((await api.acquireForFixture('capped:over', other, 'uncapped')).status).toBe(200);
    // Giving one back makes room at once.
    expect((await api.release('capped:0', a, grants[0].fencingToken)).status).toBe(204);
    expect((await api.acquireForFixture('capped:again', a, 'capped')).status).toBe(200);
    expect((await api.closeSession(b, 'capped')).status).toBe(204);
    expect((await api.openSession('capped', 30_000)).status).toBe(201);
  });
});
