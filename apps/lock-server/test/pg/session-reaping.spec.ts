import { migratedDatabase } from '@dlock/testing';
import { Client } from 'pg';
import { REAP_SESSIONS_SQL } from '../../src/locks/persistence/pg/sql';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

const RETENTION_MS = 3_600_000;

/**
 * pg backend: the reaper's statement (run by PgDatabase every minute with
 * LOCK_SESSION_RETENTION_MS) forgets only the sessions that expired longer
 * ago than the retention: those then read as never issued (404), a session
 * that expired more recently still reads as expired (410), and a live one is
 * untouched (docs/lock-server.md, "Sessions").
 */
describe('pg backend: reaping expired sessions', () => {
  let server: RunningLockServer;
  let api: LockApi;
  let raw: Client;

  beforeAll(async () => {
    const dbUrl = await migratedDatabase('lockdb');
    server = await startInProcess({ LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl });
    api = new LockApi(server.url);
    raw = new Client({ connectionString: dbUrl });
    await raw.connect();
  });
  afterAll(async () => {
    await raw.end();
    await server.stop();
  });

  /** Moves a session's expiry into the past by `agoMs`. */
  async function expiredAgo(sessionId: string, agoMs: number): Promise<void> {
    const res = await raw.query(
      `UPDATE lock_session SET expires_at = clock_timestamp() - $2::int * interval '1 millisecond'
        WHERE session_id = $1`,
      [sessionId, agoMs],
    );
    expect(res.rowCount).toBe(1);
  }

  it('forgets a session expired longer ago than the retention, and only that one', async () => {
    const [longGone, recent, live] = [
      await api.session('owner', 30_000),
      await api.session('owner', 30_000),
      await api.session('owner', 30_000),
    ];
    await expiredAgo(longGone, RETENTION_MS + 60_000);
    await expiredAgo(recent, RETENTION_MS - 60_000);

    await raw.query(REAP_SESSIONS_SQL, [RETENTION_MS]);

    const answers = [
      await api.heartbeat(longGone),
      await api.heartbeat(recent),
      await api.heartbeat(live),
    ];
    expect(answers.map((res) => [res.status, res.body.code])).toEqual([
      [404, 'SESSION_UNKNOWN'],
      [410, 'SESSION_EXPIRED'],
      [200, undefined],
    ]);
  });
});
