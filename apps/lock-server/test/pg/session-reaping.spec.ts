import { migratedDatabase } from '@dlock/testing';
import { Client } from 'pg';
import { REAP_SESSIONS_SQL } from '../../src/locks/persistence/pg/pg-locks.sql';
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
describe('pg backend: reaping ended (expired and closed) sessions', () => {
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

  /** Moves a session's expiry (and a closed one's closing instant) into the past by `agoMs`. */
  async function expiredAgo(sessionId: string, agoMs: number): Promise<void> {
    const res = await raw.query(
      `UPDATE lock_session SET expires_at = clock_timestamp() - $2::int * interval '1 millisecond',
              closed_at = CASE WHEN closed_at IS NULL THEN NULL
                               ELSE clock_timestamp() - $2::int * interval '1 millisecond' END
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

  it('keeps a closed session CLOSED for the retention, then forgets it', async () => {
    const [longClosed, recentClosed] = [
      await api.session('owner', 30_000),
      await api.session('owner', 30_000),
    ];
    for (const id of [longClosed, recentClosed])
      expect((await api.closeSession(id)).status).toBe(204);
    await expiredAgo(longClosed, RETENTION_MS + 60_000);
    await expiredAgo(recentClosed, RETENTION_MS - 60_000);

    await raw.query(REAP_SESSIONS_SQL, [RETENTION_MS]);

    const answers = [await api.heartbeat(longClosed), await api.heartbeat(recentClosed)];
    expect(answers.map((res) => [res.status, res.body.code, res.body.details])).toEqual([
      [404, 'SESSION_UNKNOWN', undefined],
      [410, 'SESSION_EXPIRED', { state: 'CLOSED' }],
    ]);
  });
});
