import { TcpProxy, adminUrl, migratedDatabase, sleep, waitFor, withClient } from '@dlock/testing';
import { http } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/**
 * pg-only availability: the lock-server reaches its database through a TCP
 * proxy the test can cut. Unreachable or read-only -> 503 NOT_LEADER, never a
 * grant; after recovery live sessions and their locks survive (docs/lock-server.md grace).
 */
describe('pg backend: database outage', () => {
  let dbUrl: string;
  let proxy: TcpProxy;
  let server: RunningLockServer;
  let api: LockApi;

  const notLeader = {
    code: 'NOT_LEADER',
    message: expect.any(String),
    retrySafe: true,
    retryAfterMillis: 250,
    traceId: TRACE_ID,
  };

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    const target = new URL(dbUrl);
    proxy = await TcpProxy.start({ target: { port: Number(target.port) } });
    const viaProxy = new URL(dbUrl);
    viaProxy.port = String(proxy.port);
    server = await startInProcess({
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: viaProxy.toString(),
      LOCKDB_PROBE_INTERVAL_MS: '200',
      LOCKDB_CONNECT_TIMEOUT_MS: '300',
      LOCKDB_STATEMENT_TIMEOUT_MS: '500',
      LOCK_NOT_LEADER_RETRY_AFTER_MS: '250',
    });
    api = new LockApi(server.url);
  });
  afterAll(async () => {
    await server.stop();
    await proxy.close();
  });

  it('answers 503 NOT_LEADER while unreachable and keeps live sessions and locks after it', async () => {
    const a = await api.session('a', 1000);
    const b = await api.session('b', 20_000);
    const grant = await api.acquire('outage:1', a, 'a', { ttlMillis: 1000 });
    expect(grant.status).toBe(200);

    proxy.setFault({ kind: 'reset' });
    const during = await api.acquire('outage:2', b, 'b');
    expect(during.status).toBe(503);
    expect(during.body).toEqual(notLeader);
    expect((await api.heartbeat(a, 'a')).body).toEqual(notLeader);
    expect((await api.inspect('outage:1')).status).toBe(503);
    expect((await http('GET', `${server.url}/health/ready`)).status).toBe(503);
    // Longer than both the session TTL and the lease TTL.
    await sleep(1_500);

    proxy.setFault({ kind: 'none' });
    await waitFor(
      async () => (await http('GET', `${server.url}/health/ready`)).status === 200,
      5_000,
      'readiness after the outage',
    );
    const beat = await api.heartbeat(a, 'a');
    expect(beat.status).toBe(200);
    expect(beat.body.heldLockCount).toBe(1);
    expect((await api.acquire('outage:1', b, 'b')).status).toBe(409);
    const renew = await api.renew('outage:1', a, grant.body.fencingToken);
    expect(renew.status).toBe(200);
    expect(renew.body.fencingToken).toBe(grant.body.fencingToken);
  });

  it('answers 503 NOT_LEADER on a read-only database and grants nothing', async () => {
    const s = await api.session('ro', 20_000);
    const dbName = new URL(dbUrl).pathname.slice(1);
    // Changed from the admin database: the lock database itself refuses writes meanwhile.
    await withClient(adminUrl(), async (c) => {
      await c.query(`ALTER DATABASE "${dbName}" SET default_transaction_read_only = on`);
      await c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = $1 AND application_name = 'dlock-lock-server'`,
        [dbName],
      );
    });
    try {
      const res = await api.acquire('ro:1', s, 'ro');
      expect(res.status).toBe(503);
      expect(res.body).toEqual(notLeader);
    } finally {
      await withClient(adminUrl(), async (c) => {
        await c.query(`ALTER DATABASE "${dbName}" SET default_transaction_read_only = off`);
        await c.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = $1 AND application_name = 'dlock-lock-server'`,
          [dbName],
        );
      });
    }
    const rows = await withClient(dbUrl, (c) =>
      c.query(`SELECT count(*)::int AS n FROM lock_entry WHERE lock_key = 'ro:1'`),
    );
    expect(rows.rows[0].n).toBe(0);
    await waitFor(
      async () => (await api.acquire('ro:1', s, 'ro')).status === 200,
      5_000,
      'a grant once writable again',
    );
  });
});
