import { adminUrl, migratedDatabase, waitFor, withClient } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

/**
 * pg backend: after the database refused writes for longer than a session's
 * TTL, the sessions and leases that were live when it began get one TTL of
 * grace (docs/lock-server.md), instead of all expiring at once. The outage is
 * a read-only lock database (cheap, in-process); outage.spec.ts cuts the
 * connection instead.
 */
const A_TTL_MS = 2_000;

describe('pg backend: grace after a read-only spell', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  let api: LockApi;

  const setReadOnly = async (on: boolean) => {
    const dbName = new URL(dbUrl).pathname.slice(1);
    await withClient(adminUrl(), async (c) => {
      await c.query(
        `ALTER DATABASE "${dbName}" SET default_transaction_read_only = ${on ? 'on' : 'off'}`,
      );
      // Pooled connections keep their setting: end them so new ones read the change.
      await c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'dlock-lock-server'`,
        [dbName],
      );
    });
  };

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('a session and lease that lapsed during the spell survive it with the same token; a closed one stays CLOSED', async () => {
    // Two seconds: short enough to lapse during the spell, long enough to outlive one request
    // after the heartbeat on a loaded machine.
    const a = await api.session('a', A_TTL_MS);
    const b = await api.session('b', 30_000);
    // Closed just before the spell: the grace must not revive it (docs/lock-server.md).
    const closed = await api.session('c', 30_000);
    expect((await api.closeSession(closed, 'c')).status).toBe(204);
    const grant = await api.acquire('grace:1', a, 'a', { ttlMillis: A_TTL_MS });
    expect(grant.status).toBe(200);
    await setReadOnly(true);
    try {
      expect((await api.acquire('grace:2', b, 'b')).status).toBe(503);
      await waitFor(
        () =>
          withClient(dbUrl, async (c) => {
            const { rows } = await c.query(
              `SELECT bool_and(expires_at < clock_timestamp()) AS lapsed FROM (
                 SELECT expires_at FROM lock_session WHERE session_id = $1
                 UNION ALL SELECT expires_at FROM lock_entry WHERE lock_key = 'grace:1') t`,
              [a],
            );
            return rows[0].lapsed === true;
          }),
        A_TTL_MS + 5_000,
        'the session and the lease to lapse in the database',
      );
    } finally {
      await setReadOnly(false);
    }
    const beat = await waitFor(
      async () => {
        const res = await api.heartbeat(a, 'a');
        return res.status === 503 ? null : res;
      },
      5_000,
      'an answer once writable',
    );
    expect({ status: beat.status, held: beat.body.heldLockCount }).toEqual({
      status: 200,
      held: 1,
    });
    // The renew first, right after the heartbeat that renewed the session: the session's TTL
    // runs from that heartbeat, and the other checks take time on a loaded machine.
    const renew = await api.renew('grace:1', a, grant.body.fencingToken);
    expect({ status: renew.status, token: renew.body.fencingToken }).toEqual({
      status: 200,
      token: grant.body.fencingToken,
    });
    expect((await api.acquire('grace:1', b, 'b')).status).toBe(409);
    const late = await api.heartbeat(closed, 'c');
    expect([late.status, late.body.details]).toEqual([410, { state: 'CLOSED' }]);
  });
});
