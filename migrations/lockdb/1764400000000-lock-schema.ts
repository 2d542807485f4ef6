import type { MigrationInterface, QueryRunner } from 'typeorm';
import { assertDestructiveDownAllowed } from '../destructive-down';

/**
 * lockdb schema (docs/operations.md).
 * - `fencing_token_seq`: the ONE source of fencing tokens. Never reset or
 *   rewound (INV-04); a restore must set it above every token ever issued.
 * - `lock_session`: one row per session; expiry is compared with the
 *   database clock inside every statement.
 * - `lock_entry`: one row per key ever acquired (L7 answers 404 only for keys
 *   never seen). `session_id IS NULL` means released; otherwise the key is
 *   held while `expires_at` is in the future AND the session is alive.
 *   `fencing_token` is the token of the latest grant of the key.
 * - `lock_revocation`: the L8 audit trail.
 */
export class LockSchema1764400000000 implements MigrationInterface {
  name = 'LockSchema1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE SEQUENCE fencing_token_seq AS bigint MINVALUE 1 START WITH 1 INCREMENT BY 1 NO CYCLE`,
    );
    await q.query(`
      CREATE TABLE lock_session (
        session_id uuid PRIMARY KEY,
        owner_id varchar(64) NOT NULL,
        ttl_ms integer NOT NULL CHECK (ttl_ms BETWEEN 1000 AND 60000),
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX lock_session_expires_idx ON lock_session (expires_at)`);
    await q.query(`
      CREATE TABLE lock_entry (
        lock_key varchar(128) PRIMARY KEY CHECK (lock_key ~ '^[a-zA-Z0-9:._-]{1,128}$'),
        session_id uuid NULL,
        owner_id varchar(64) NOT NULL,
        fencing_token bigint NOT NULL CHECK (fencing_token > 0),
        ttl_ms integer NOT NULL CHECK (ttl_ms BETWEEN 1000 AND 60000),
        acquired_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(
      `CREATE INDEX lock_entry_session_idx ON lock_entry (session_id) WHERE session_id IS NOT NULL`,
    );
    await q.query(`
      CREATE TABLE lock_revocation (
        revocation_id uuid PRIMARY KEY,
        lock_key varchar(128) NOT NULL,
        revoked_token bigint NOT NULL,
        new_token_floor bigint NOT NULL CHECK (new_token_floor > revoked_token),
        operator varchar(128) NOT NULL,
        reason text NOT NULL CHECK (length(reason) >= 8),
        holder_owner_id varchar(64) NOT NULL,
        holder_session_id uuid NOT NULL,
        revoked_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX lock_revocation_key_idx ON lock_revocation (lock_key, revoked_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    assertDestructiveDownAllowed('drop fencing_token_seq, the source of every fencing token');
    await q.query(`DROP TABLE lock_revocation`);
    await q.query(`DROP TABLE lock_entry`);
    await q.query(`DROP TABLE lock_session`);
    // Dropping the sequence forgets every issued token: only ever on a throwaway database.
    await q.query(`DROP SEQUENCE fencing_token_seq`);
  }
}
