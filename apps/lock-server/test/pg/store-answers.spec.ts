import { migratedDatabase, waitFor } from '@dlock/testing';
import { Client } from 'pg';
import { PgDatabase } from '../../src/locks/persistence/pg/pg.gateway';
import { ACQUIRE_SQL, INSPECT_SQL } from '../../src/locks/persistence/pg/pg-locks.sql';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/** Backends of this database waiting for a lock (our acquire behind the rival's row lock). */
async function lockWaiters(raw: Client): Promise<number> {
  const { rows } = await raw.query(
    `SELECT count(*) AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND datname = current_database()`,
  );
  return Number(rows[0].n);
}

/**
 * pg backend: what an acquire that lost a race is told. The race is forced
 * with a second replica's acquire held open in a transaction (its row lock
 * makes ours wait), never with sleeps.
 */
describe('pg backend: the answer to an acquire that lost a race', () => {
  let dbUrl: string;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  /**
   * Our acquire starts while the key looks free to its snapshot (`prepare`
   * left it so), then waits on the row lock of another replica's grant, which
   * commits. `beforeReRead` runs after our statement answered and before the
   * store reads the holder again. Returns the HTTP answer and the rival's grant.
   */
  async function raceAgainstCommittingGrant(
    key: string,
    prepare: () => Promise<void>,
    beforeReRead: (rival: { session: string; token: string }) => Promise<void> = async () => {},
  ) {
    await prepare();
    const rival = await api.session('rival', 30_000);
    const late = await api.session('late', 30_000);
    const raw = new Client({ connectionString: dbUrl });
    await raw.connect();
    const reRead = gateReRead(key);
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
      // A store that answers without reading the holder again is answered at once (and judged by
      // the caller's expectations), not waited for.
      const first = await Promise.race([
        reRead.reached.then(() => 'reRead' as const),
        answer.then(() => 'answered' as const),
      ]);
      if (first === 'reRead')
        await beforeReRead({ session: rival, token: String(granted.fencing_token) });
      reRead.open();
      return { res: await answer, granted };
    } finally {
      reRead.open();
      await raw.end();
    }
  }

  /** Holds the store's next holder read of `key` (INSPECT_SQL) until open() is called. */
  function gateReRead(key: string) {
    const db = server.app.get(PgDatabase);
    const rows = db.rows.bind(db);
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    let reached!: () => void;
    const reachedP = new Promise<void>((resolve) => (reached = resolve));
    const spy = jest.spyOn(db, 'rows').mockImplementation(async (sql, params) => {
      if (sql === INSPECT_SQL && params?.[0] === key) {
        spy.mockRestore();
        reached();
        await opened;
      }
      return rows(sql, params);
    });
    return {
      reached: reachedP,
      open: () => {
        spy.mockRestore();
        open();
      },
    };
  }

  /** The whole 409 an acquire that lost is answered, with these details. */
  const contended = (details: { holderOwnerId: string; expiresAt: unknown }) => ({
    status: 409,
    body: {
      code: 'LOCK_CONTENDED',
      message: expect.any(String),
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details,
      traceId: TRACE_ID,
    },
  });

  async function contendedByRival(key: string, prepare: () => Promise<void>) {
    const { res, granted } = await raceAgainstCommittingGrant(key, prepare);
    expect({ status: res.status, body: res.body }).toEqual(
      contended({ holderOwnerId: 'rival', expiresAt: granted.expires_at.toISOString() }),
    );
  }

  it('a key released before our acquire but granted to another replica meanwhile: contended, naming the new holder', async () => {
    await contendedByRival('race:released', async () => {
      const old = await api.session('old', 30_000);
      const grant = await api.acquire('race:released', old, 'old');
      expect((await api.release('race:released', old, grant.body.fencingToken, 'old')).status).toBe(
        204,
      );
    });
  });

  it('a lease that lapsed before our acquire but was granted to another replica meanwhile: contended, naming the new holder', async () => {
    await contendedByRival('race:lapsed', async () => {
      const old = await api.session('old', 30_000);
      expect((await api.acquire('race:lapsed', old, 'old', { ttlMillis: 1_000 })).status).toBe(200);
      await waitFor(
        async () => (await api.inspect('race:lapsed')).body.held === false,
        5_000,
        'the lease to lapse',
      );
    });
  });

  // The rival's grant is gone again by the time the store reads the holder
  // (released between our statement and that read): still a plain contended
  // answer that says the key is free now, never a crash on the missing holder.
  it('a never-seen key granted to another replica and released again before the holder is read: contended, free now', async () => {
    const before = Date.now();
    const { res } = await raceAgainstCommittingGrant(
      'race:gone',
      async () => {},
      async (rival) => {
        expect((await api.release('race:gone', rival.session, rival.token, 'rival')).status).toBe(
          204,
        );
      },
    );
    expect({ status: res.status, body: res.body }).toEqual(
      contended({ holderOwnerId: '', expiresAt: expect.any(String) }),
    );
    const freeAt = Date.parse(res.body.details.expiresAt);
    expect(freeAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(freeAt).toBeLessThanOrEqual(Date.now() + 1_000);
  });
});
