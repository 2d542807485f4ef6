// A database that is down, cut, or refusing the app's credentials is 503
// UNAVAILABLE with retrySafe true on reads (the lock-server: its NOT_LEADER),
// /health/ready follows whether a new connection can be had, and an app whose
// database is down at boot starts unready and becomes ready when it returns
// (issue 19 §5, §8; README "Wire conventions"). Real apps from dist/,
// real PostgreSQL, the database held away through a TCP proxy.
import { randomBytes, randomUUID } from 'node:crypto';
import {
  TcpProxy,
  adminUrl,
  http,
  migratedDatabase,
  readerUrl,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
} from '@dlock/testing';

const TRACE = expect.stringMatching(/^[0-9a-f]{32}$/);
const UNAVAILABLE = {
  code: 'UNAVAILABLE',
  message: 'a database this service needs is unavailable',
  retrySafe: true,
  traceId: TRACE,
};

function through(proxy: TcpProxy, url: string): string {
  const u = new URL(url);
  u.port = String(proxy.port);
  return u.toString();
}

function pgPort(): number {
  return Number(new URL(adminUrl()).port);
}

async function readiness(app: RunningApp): Promise<number> {
  return (await fetch(`${app.url}/health/ready`)).status;
}

describe('database unavailable: reads and readiness', () => {
  let proxy: TcpProxy;
  let paydb: string;
  let payment: RunningApp;
  let rail: RunningApp;
  let reads: { app: () => RunningApp; path: string }[];

  beforeAll(async () => {
    proxy = await TcpProxy.start({ target: { port: pgPort() } });
    paydb = await migratedDatabase('paydb');
    const proxydb = await migratedDatabase('proxydb');
    const accountId = await seedFundedAccount(paydb);
    const payoutId = await seedPendingPayout(paydb, accountId);
    [payment, rail] = await Promise.all([
      spawnApp('payment-resource', { PAYDB_URL: through(proxy, paydb) }),
      spawnApp('rail-proxy', {
        PROXYDB_URL: through(proxy, proxydb),
        RAIL_STUB_URL: 'http://127.0.0.1:9',
      }),
    ]);
    reads = [
      { app: () => payment, path: '/v1/payouts?state=PENDING' },
      { app: () => payment, path: `/v1/accounts/${accountId}` },
      { app: () => payment, path: `/v1/payouts/${payoutId}` },
      // R2: no record is 404, a working answer either way.
      { app: () => rail, path: `/v1/rail/submissions/${randomUUID()}` },
    ];
  });
  afterAll(async () => {
    await Promise.all([payment?.stop(), rail?.stop()]);
    await proxy?.close();
  });

  it('cut: every read is 503 UNAVAILABLE retry-safe, unready, then ready and answering again', async () => {
    for (const r of reads)
      expect([200, 404]).toContain((await http('GET', `${r.app().url}${r.path}`)).status);
    expect(await readiness(payment)).toBe(200);
    expect(await readiness(rail)).toBe(200);

    proxy.setFault({ kind: 'reset' });
    for (let round = 0; round < 3; round++) {
      for (const r of reads) {
        const res = await http('GET', `${r.app().url}${r.path}`);
        expect({ path: r.path, status: res.status, body: res.body }).toEqual({
          path: r.path,
          status: 503,
          body: UNAVAILABLE,
        });
      }
    }
    for (const app of [payment, rail]) {
      const res = await http('GET', `${app.url}/health/ready`);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'UNAVAILABLE', retrySafe: true, traceId: TRACE });
    }

    proxy.setFault({ kind: 'none' });
    for (const app of [payment, rail]) {
      await waitFor(async () => (await readiness(app)) === 200, 20_000, `${app.name} ready again`);
    }
    for (const r of reads)
      expect([200, 404]).toContain((await http('GET', `${r.app().url}${r.path}`)).status);
  });
});

describe('database unavailable: the role password changes under a running app', () => {
  const role = `pr_${randomBytes(4).toString('hex')}`;
  let app: RunningApp;
  let paydb: string;
  let accountId: string;

  beforeAll(async () => {
    paydb = await migratedDatabase('paydb');
    accountId = await seedFundedAccount(paydb);
    await withClient(paydb, async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'first'`);
      await c.query(`GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO ${role}`);
    });
    const url = new URL(paydb);
    url.username = role;
    url.password = 'first';
    app = await spawnApp('payment-resource', { PAYDB_URL: url.toString() });
  });
  afterAll(async () => {
    await app?.stop();
    await withClient(paydb, async (c) => {
      await c.query(`DROP OWNED BY ${role}`);
      await c.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  it('is unready while no new connection authenticates, every read is 503 (none 500), and recovers', async () => {
    const read = () => http('GET', `${app.url}/v1/accounts/${accountId}`);
    for (let i = 0; i < 5; i++) expect((await read()).status).toBe(200);
    expect(await readiness(app)).toBe(200);

    await withClient(paydb, (c) => c.query(`ALTER ROLE ${role} PASSWORD 'second'`));
    // Pooled sessions outlive the change; readiness asks for a new one.
    await waitFor(async () => (await readiness(app)) === 503, 10_000, 'unready after the change');

    // Sessions recycled (restart, idle timeout): the pool must open new ones, which fail.
    await withClient(paydb, (c) =>
      c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [role]),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await read();
      statuses.push(res.status);
      expect(res.body).toEqual(UNAVAILABLE);
    }
    expect(new Set(statuses)).toEqual(new Set([503]));

    await withClient(paydb, (c) => c.query(`ALTER ROLE ${role} PASSWORD 'first'`));
    await waitFor(async () => (await readiness(app)) === 200, 10_000, 'ready after the revert');
    expect((await read()).status).toBe(200);
  });
});

describe('database down at boot', () => {
  let proxy: TcpProxy;
  const apps: RunningApp[] = [];

  beforeAll(async () => {
    proxy = await TcpProxy.start({ target: { port: pgPort() } });
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await proxy?.close();
  });

  it('payment-resource, rail-proxy and lock-server start unready and become ready when it returns', async () => {
    const [lockdb, paydb, proxydb] = await Promise.all([
      migratedDatabase('lockdb'),
      migratedDatabase('paydb'),
      migratedDatabase('proxydb'),
    ]);
    proxy.setFault({ kind: 'reset' });
    const specs: { app: string; env: Record<string, string>; read: string; down: unknown }[] = [
      {
        app: 'payment-resource',
        env: { PAYDB_URL: through(proxy, paydb) },
        read: '/v1/payouts?state=PENDING',
        down: UNAVAILABLE,
      },
      {
        app: 'rail-proxy',
        env: { PROXYDB_URL: through(proxy, proxydb), RAIL_STUB_URL: 'http://127.0.0.1:9' },
        read: `/v1/rail/submissions/${randomUUID()}`,
        down: UNAVAILABLE,
      },
      {
        app: 'lock-server',
        env: { LOCK_BACKEND: 'pg', LOCKDB_URL: through(proxy, lockdb) },
        read: '/v1/locks/account:boot-1',
        down: expect.objectContaining({ code: 'NOT_LEADER', retrySafe: true }),
      },
    ];
    // spawnApp waits for /health/live: the process must be up and serving, not retrying or exited.
    for (const s of specs) apps.push(await spawnApp(s.app, s.env));
    for (const [i, s] of specs.entries()) {
      expect(await readiness(apps[i])).toBe(503);
      const res = await http('GET', `${apps[i].url}${s.read}`);
      expect({ app: s.app, status: res.status, body: res.body }).toEqual({
        app: s.app,
        status: 503,
        body: s.down,
      });
    }

    proxy.setFault({ kind: 'none' });
    for (const [i, s] of specs.entries()) {
      await waitFor(async () => (await readiness(apps[i])) === 200, 20_000, `${s.app} ready`);
      const res = await http('GET', `${apps[i].url}${s.read}`);
      expect(res.status).toBeLessThan(500);
    }
  });

  it('the reconciler starts unready with both databases down and becomes ready when they return', async () => {
    const [paydb, proxydb] = await Promise.all([
      migratedDatabase('paydb'),
      migratedDatabase('proxydb'),
    ]);
    proxy.setFault({ kind: 'reset' });
    const reconciler = await spawnApp('reconciler', {
      LOCK_SERVER_URL: 'http://127.0.0.1:9',
      PAYMENT_RESOURCE_URL: 'http://127.0.0.1:9',
      RAIL_STUB_URL: 'http://127.0.0.1:9',
      PAYDB_URL: through(proxy, readerUrl(paydb)),
      PROXYDB_URL: through(proxy, readerUrl(proxydb)),
      OWNER_ID: 'boot-test',
    });
    apps.push(reconciler);
    expect(await readiness(reconciler)).toBe(503);

    proxy.setFault({ kind: 'none' });
    await waitFor(async () => (await readiness(reconciler)) === 200, 20_000, 'reconciler ready');
  });
});

describe('database unavailable: the lock-server role password changes under a running server', () => {
  const role = `ls_${randomBytes(4).toString('hex')}`;
  let app: RunningApp;
  let lockdb: string;

  beforeAll(async () => {
    lockdb = await migratedDatabase('lockdb');
    await withClient(lockdb, async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'first'`);
      await c.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      );
      await c.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
    });
    const url = new URL(lockdb);
    url.username = role;
    url.password = 'first';
    app = await spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: url.toString() });
  });
  afterAll(async () => {
    await app?.stop();
    await withClient(lockdb, async (c) => {
      await c.query(`DROP OWNED BY ${role}`);
      await c.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  it('is unready while no new connection authenticates, and ready again after the revert', async () => {
    expect(await readiness(app)).toBe(200);
    await withClient(lockdb, (c) => c.query(`ALTER ROLE ${role} PASSWORD 'second'`));
    // Pooled sessions still answer the probe statement; a new session does not.
    await waitFor(async () => (await readiness(app)) === 503, 10_000, 'unready after the change');
    await withClient(lockdb, (c) => c.query(`ALTER ROLE ${role} PASSWORD 'first'`));
    await waitFor(async () => (await readiness(app)) === 200, 10_000, 'ready after the revert');
  });
});
