import { adminUrl, http, migratedDatabase, waitFor, withClient } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';

/**
 * pg readiness (docs/lock-server.md): ready only while a new connection to the
 * database can be opened and it is writable, so a pod whose database is gone
 * leaves the Service. The full outage story, with grants refused and the grace
 * after it, is outage.spec.ts; this is the probe alone, in seconds.
 */
describe('pg backend: readiness follows the database', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  const allowConnections = (allow: boolean) =>
    withClient(adminUrl(), (c) =>
      c.query(
        `ALTER DATABASE "${new URL(dbUrl).pathname.slice(1)}" WITH ALLOW_CONNECTIONS ${allow}`,
      ),
    );

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
  });
  afterAll(async () => {
    await allowConnections(true);
    await server.stop();
  });

  it('is ready with its database, not ready while no new connection can be opened, and ready again after', async () => {
    // Ready once a new connection opened within the probe's 2 s: on a loaded machine (two test
    // runs side by side) the first probe after start has missed that.
    await waitFor(
      async () => (await http('GET', `${server.url}/health/ready`)).status === 200,
      10_000,
      'readiness with its database',
    );
    await allowConnections(false);
    const down = await http('GET', `${server.url}/health/ready`);
    expect(down.status).toBe(503);
    const reason = {
      status: 'down',
      reason: 'lock database unavailable or read-only; nothing was decided',
    };
    expect(down.body.details).toEqual({
      status: 'error',
      info: {},
      error: { lockBackend: reason },
      details: { lockBackend: reason },
    });
    await allowConnections(true);
    await waitFor(
      async () => (await http('GET', `${server.url}/health/ready`)).status === 200,
      10_000,
      'readiness once connections are allowed again',
    );
  });
});
