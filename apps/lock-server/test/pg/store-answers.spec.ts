import { http, migratedDatabase, waitFor } from '@dlock/testing';
import { Client } from 'pg';
import { ACQUIRE_SQL } from '../../src/store/pg/sql';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/**
 * pg backend: what an acquire that lost a race, or waited, is told. The race
 * is forced with a second replica's acquire held open in a transaction (its
 * row lock makes ours wait), never with sleeps.
 */
/** A gauge's value from the server's /metrics. */
async function gauge(url: string, name: string): Promise<number> {
  const text = (await http('GET', `${url}/metrics`)).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

/** Backends of this database waiting for a lock (our acquire behind the rival's row lock). */
async function lockWaiters(raw: Client): Promise<number> {
  const { rows } = await raw.query(
    `SELECT count(*) AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND datname = current_database()`,
  );
  return Number(rows[0].n);
}

describe('pg backend: answers to racing and waiting acquires', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    // Polls slower than any wait below: only the in-process release signal can wake a waiter in time.
    server = await startInProcess({
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: dbUrl,
      LOCK_WAIT_POLL_MS: '5000',
    });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  /**
   * Our acquire starts while the key looks free to its snapshot (`prepare`
   * left it so), then waits on the row lock of another replica's grant, which
   * commits: the answer must name that new holder, read after the wait.
   */
  async function raceAgainstCommittingGrant(key: string, prepare: () => Promise<void>) {
    await prepare();
    const rival = await api.session('rival', 30_000);
    const late = await api.session('late', 30_000);
    const raw = new Client({ connectionString: dbUrl });
    await raw.connect();
    try {
      await raw.query('BEGIN');
      const granted = (await raw.query(ACQUIRE_SQL, [key, rival, 'rival', 20_000])).rows[0];
      expect(granted.outcome).toBe('granted');
      const answer = api.acquire(key, late, 'late');
      const watcher = new Client({ connectionString: dbUrl });
      await watcher.connect();
      try {
        await waitFor(async () => (await lockWaiters(watcher)) > 0, 10_000, 'the acquire to wait');
      } finally {
        await watcher.end();
      }
      await raw.query('COMMIT');
      const res = await answer;
      expect({ status: res.status, body: res.body }).toEqual({
        status: 409,
        body: {
          code: 'LOCK_CONTENDED',
          message: expect.any(String),
          retrySafe: true,
          retryAfterMillis: expect.any(Number),
          details: { holderOwnerId: 'rival', expiresAt: granted.expires_at.toISOString() },
          traceId: TRACE_ID,
        },
      });
    } finally {
      await raw.end();
    }
  }

  it('a key released before our acquire but granted to another replica meanwhile: contended, naming the new holder', async () => {
    await raceAgainstCommittingGrant('race:released', async () => {
      const old = await api.session('old', 30_000);
      const grant = await api.acquire('race:released', old, 'old');
      expect((await api.release('race:released', old, grant.body.fencingToken, 'old')).status).toBe(
        204,
      );
    });
  });

  it('a lease that lapsed before our acquire but was granted to another replica meanwhile: contended, naming the new holder', async () => {
    await raceAgainstCommittingGrant('race:lapsed', async () => {
      const old = await api.session('old', 30_000);
      expect((await api.acquire('race:lapsed', old, 'old', { ttlMillis: 1_000 })).status).toBe(200);
      await waitFor(
        async () => (await api.inspect('race:lapsed')).body.held === false,
        5_000,
        'the lease to lapse',
      );
    });
  });

  it('a release and a revoke through this process wake a waiting acquire at once, not at the next poll', async () => {
    const holder = await api.session('holder', 30_000);
    const waiter = await api.session('waiter', 30_000);
    for (const free of ['release', 'revoke'] as const) {
      const key = `wake:${free}`;
      const grant = await api.acquire(key, holder, 'holder', { ttlMillis: 30_000 });
      const waiting = api.acquire(key, waiter, 'waiter', { waitMillis: 20_000 });
      await waitFor(
        async () => (await gauge(server.url, 'lock_server_waiting_acquires')) === 1,
        10_000,
        'the acquire to wait',
      );
      const freedAt = Date.now();
      if (free === 'release') {
        expect((await api.release(key, holder, grant.body.fencingToken, 'holder')).status).toBe(
          204,
        );
      } else {
        expect((await api.revoke(key, { operator: 'ops', reason: 'wake test' })).status).toBe(200);
      }
      const res = await waiting;
      expect(res.status).toBe(200);
      expect(res.body.ownerId).toBe('waiter');
      // The poll would take 5 s; the signal takes milliseconds. 3 s is margin for a loaded machine.
      expect(Date.now() - freedAt).toBeLessThan(3_000);
      expect((await api.release(key, waiter, res.body.fencingToken, 'waiter')).status).toBe(204);
    }
  });

  it('the activity gauges count live sessions and live grants from the database', async () => {
    const fresh = await migratedDatabase('lockdb');
    const own = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: fresh });
    try {
      const ownApi = new LockApi(own.url);
      const s1 = await ownApi.session('g1', 30_000);
      await ownApi.session('g2', 30_000);
      await ownApi.acquire('gauge:1', s1, 'g1');
      await ownApi.acquire('gauge:2', s1, 'g1');
      expect([
        await gauge(own.url, 'lock_server_active_sessions'),
        await gauge(own.url, 'lock_server_active_grants'),
      ]).toEqual([2, 2]);
    } finally {
      await own.stop();
    }
  });
});
