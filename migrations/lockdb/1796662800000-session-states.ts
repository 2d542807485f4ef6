import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session states (docs/lock-server.md, "Session states"): L3 no longer deletes the row. It
 * sets `closed_at` and ends the lease at that instant, so every liveness test
 * (`expires_at > clock_timestamp()`) already reads it as ended, and the reaper forgets it
 * LOCK_SESSION_RETENTION_MS later, like an expired one. ACTIVE / SUSPECT / EXPIRED are
 * derived from `expires_at` and `ttl_ms`, never stored.
 */
export class SessionStates1796662800000 implements MigrationInterface {
  name = 'SessionStates1796662800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE lock_session ADD COLUMN closed_at timestamptz NULL`);
    await q.query(`
      ALTER TABLE lock_session ADD CONSTRAINT lock_session_closed_ended
        CHECK (closed_at IS NULL OR expires_at <= closed_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Closed rows would read as expired without the column: drop them (they are ended).
    await q.query(`DELETE FROM lock_session WHERE closed_at IS NOT NULL`);
    await q.query(`ALTER TABLE lock_session DROP CONSTRAINT lock_session_closed_ended`);
    await q.query(`ALTER TABLE lock_session DROP COLUMN closed_at`);
  }
}
