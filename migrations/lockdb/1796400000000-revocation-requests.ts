import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `lock_revocation_request`: two-person force-revokes (docs/security.md). A
 * row is the request; its approval fills approved_by/approved_at once. The
 * trigger keeps the record: no DELETE or TRUNCATE, and an UPDATE may only
 * approve a pending row (firing ALWAYS, as lock_revocation's does).
 */
export class RevocationRequests1796400000000 implements MigrationInterface {
  name = 'RevocationRequests1796400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE lock_revocation_request (
        request_id     uuid PRIMARY KEY,
        lock_key       text NOT NULL,
        expected_token bigint,
        operator       text NOT NULL,
        reason         text NOT NULL,
        requested_by   text NOT NULL,
        requested_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
        expires_at     timestamptz NOT NULL,
        approved_by    text,
        approved_at    timestamptz,
        CHECK (approved_by IS NULL OR approved_by <> requested_by),
        CHECK ((approved_by IS NULL) = (approved_at IS NULL))
      )`);
    await q.query(`
      CREATE FUNCTION lock_revocation_request_kept() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.approved_by IS NULL
           AND (NEW.request_id, NEW.lock_key, NEW.expected_token, NEW.operator, NEW.reason,
                NEW.requested_by, NEW.requested_at, NEW.expires_at)
               IS NOT DISTINCT FROM
               (OLD.request_id, OLD.lock_key, OLD.expected_token, OLD.operator, OLD.reason,
                OLD.requested_by, OLD.requested_at, OLD.expires_at) THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION '%: % refused (only the approval of a pending request may be written)',
          TG_TABLE_NAME, TG_OP USING ERRCODE = 'restrict_violation';
      END $$`);
    await q.query(`
      CREATE TRIGGER lock_revocation_request_kept BEFORE UPDATE OR DELETE ON lock_revocation_request
      FOR EACH ROW EXECUTE FUNCTION lock_revocation_request_kept()`);
    await q.query(`
      CREATE TRIGGER lock_revocation_request_no_truncate BEFORE TRUNCATE ON lock_revocation_request
      FOR EACH STATEMENT EXECUTE FUNCTION lock_revocation_request_kept()`);
    await q.query(
      `ALTER TABLE lock_revocation_request ENABLE ALWAYS TRIGGER lock_revocation_request_kept`,
    );
    await q.query(
      `ALTER TABLE lock_revocation_request ENABLE ALWAYS TRIGGER lock_revocation_request_no_truncate`,
    );
  }

  /** Fails (and changes nothing) once a request exists: audit records are never deleted. */
  async down(q: QueryRunner): Promise<void> {
    const rows: { n: string }[] = await q.query(
      `SELECT count(*)::text AS n FROM lock_revocation_request`,
    );
    if (rows[0].n !== '0') {
      throw new Error(
        `refusing to revert: ${rows[0].n} lock_revocation_request row(s) exist; ` +
          'revocation requests are audit records and are never deleted',
      );
    }
    await q.query(`DROP TABLE lock_revocation_request`);
    await q.query(`DROP FUNCTION lock_revocation_request_kept()`);
  }
}
