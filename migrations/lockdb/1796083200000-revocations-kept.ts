import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `lock_revocation` is the audit trail of force-revocations (L8): written
 * once by the lock-server, never changed or removed. One statement-level
 * trigger refuses UPDATE, DELETE and TRUNCATE, firing `ALWAYS` so that
 * `session_replication_role = replica` does not switch it off.
 */
export class RevocationsKept1796083200000 implements MigrationInterface {
  name = 'RevocationsKept1796083200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION lock_revocation_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
          USING ERRCODE = 'restrict_violation';
      END $$`);
    await q.query(`
      CREATE TRIGGER lock_revocation_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON lock_revocation
      FOR EACH STATEMENT EXECUTE FUNCTION lock_revocation_append_only()`);
    await q.query(`ALTER TABLE lock_revocation ENABLE ALWAYS TRIGGER lock_revocation_append_only`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER lock_revocation_append_only ON lock_revocation`);
    await q.query(`DROP FUNCTION lock_revocation_append_only()`);
  }
}
