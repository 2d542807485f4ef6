import type { MigrationInterface, QueryRunner } from 'typeorm';

const OLD_LIVE = `outcome IS DISTINCT FROM 'FENCED' AND fencing_enforced`;
const NEW_LIVE = `outcome IS DISTINCT FROM 'FENCED' AND outcome IS DISTINCT FROM 'WITHDRAWN' AND fencing_enforced`;

/** Since this migration no row is ever deleted... */
const NEVER_DELETED = `
      RAISE EXCEPTION 'rail_submission % is never deleted', OLD.submission_id
        USING ERRCODE = 'restrict_violation';`;
/** ...before it, an unresolved row could be (the withdrawal, now an outcome). */
const RESOLVED_NEVER_DELETED = `
      IF OLD.outcome IS NOT NULL THEN
        RAISE EXCEPTION 'resolved rail_submission % is never deleted', OLD.submission_id
          USING ERRCODE = 'restrict_violation';
      END IF;
      RETURN OLD;`;

/** The row guard of 1767225600000 with the given DELETE branch; the UPDATE rules are unchanged. */
const guardSql = (onDelete: string) => `
  CREATE OR REPLACE FUNCTION rail_submission_guard() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' THEN${onDelete}
    END IF;
    IF OLD.outcome IS NOT NULL THEN
      RAISE EXCEPTION 'rail_submission % is already resolved as %', OLD.submission_id, OLD.outcome
        USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.outcome IS NULL THEN
      RAISE EXCEPTION 'rail_submission % may only be updated to record its outcome', OLD.submission_id
        USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.submission_id, NEW.payout_id, NEW.account_id, NEW.presented_token, NEW.owner_id,
        NEW.idempotency_key, NEW.client_ref, NEW.amount_minor, NEW.currency, NEW.beneficiary_ref,
        NEW.fencing_enforced, NEW.created_at)
       IS DISTINCT FROM
       (OLD.submission_id, OLD.payout_id, OLD.account_id, OLD.presented_token, OLD.owner_id,
        OLD.idempotency_key, OLD.client_ref, OLD.amount_minor, OLD.currency, OLD.beneficiary_ref,
        OLD.fencing_enforced, OLD.created_at) THEN
      RAISE EXCEPTION 'rail_submission % identity is immutable', OLD.submission_id
        USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
  END $$`;

/**
 * Every rail attempt is kept (docs/rail.md, proxydb schema):
 * - an intent whose connection closed before a byte was written is resolved
 *   as `WITHDRAWN` (error_code says why) instead of being deleted; like
 *   `FENCED` it presented nothing, so the one-live-submission index leaves it out;
 * - `rail_submission` refuses every DELETE and TRUNCATE, and `rail_high_water`
 *   (which already refused row deletes) refuses TRUNCATE too;
 * - the guards fire `ALWAYS`, so `session_replication_role = replica` does not
 *   switch them off.
 * Existing rows are unchanged (withdrawn intents of the past are gone already).
 */
export class RailAttemptsKept1796083200000 implements MigrationInterface {
  name = 'RailAttemptsKept1796083200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE rail_submission DROP CONSTRAINT rail_submission_outcome_check`);
    await q.query(`ALTER TABLE rail_submission ALTER COLUMN outcome TYPE varchar(16)`);
    await q.query(`
      ALTER TABLE rail_submission ADD CONSTRAINT rail_submission_outcome_check
        CHECK (outcome IN ('ACKED', 'REJECTED', 'TIMEOUT', 'FENCED', 'WITHDRAWN'))`);
    await q.query(`
      ALTER TABLE rail_submission ADD CONSTRAINT rail_submission_withdrawn_says_why
        CHECK (outcome IS DISTINCT FROM 'WITHDRAWN' OR (error_code IS NOT NULL AND rail_reference IS NULL))`);
    await q.query(`DROP INDEX rail_submission_one_live_per_payout`);
    await q.query(
      `CREATE UNIQUE INDEX rail_submission_one_live_per_payout ON rail_submission (payout_id) WHERE ${NEW_LIVE}`,
    );
    await q.query(guardSql(NEVER_DELETED));
    await q.query(`
      CREATE FUNCTION rail_record_never_removed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION '% rows are never removed: % refused', TG_TABLE_NAME, TG_OP
          USING ERRCODE = 'restrict_violation';
      END $$`);
    for (const table of ['rail_submission', 'rail_high_water']) {
      await q.query(`
        CREATE TRIGGER ${table}_never_removed BEFORE DELETE OR TRUNCATE ON ${table}
        FOR EACH STATEMENT EXECUTE FUNCTION rail_record_never_removed()`);
      await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${table}_never_removed`);
      await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${table}_guard`);
    }
  }

  /** Fails (and changes nothing) once a WITHDRAWN row exists: the old schema cannot hold it. */
  async down(q: QueryRunner): Promise<void> {
    const withdrawn: { n: string }[] = await q.query(
      `SELECT count(*)::text AS n FROM rail_submission WHERE outcome = 'WITHDRAWN'`,
    );
    if (withdrawn[0].n !== '0') {
      throw new Error(
        `refusing to revert: ${withdrawn[0].n} WITHDRAWN rail_submission row(s) exist and the ` +
          'older schema cannot hold them; rail attempts are never deleted',
      );
    }
    for (const table of ['rail_submission', 'rail_high_water']) {
      await q.query(`ALTER TABLE ${table} ENABLE TRIGGER ${table}_guard`);
      await q.query(`DROP TRIGGER ${table}_never_removed ON ${table}`);
    }
    await q.query(`DROP FUNCTION rail_record_never_removed()`);
    await q.query(guardSql(RESOLVED_NEVER_DELETED));
    await q.query(`DROP INDEX rail_submission_one_live_per_payout`);
    await q.query(
      `CREATE UNIQUE INDEX rail_submission_one_live_per_payout ON rail_submission (payout_id) WHERE ${OLD_LIVE}`,
    );
    await q.query(`ALTER TABLE rail_submission DROP CONSTRAINT rail_submission_withdrawn_says_why`);
    await q.query(`ALTER TABLE rail_submission DROP CONSTRAINT rail_submission_outcome_check`);
    await q.query(`
      ALTER TABLE rail_submission ADD CONSTRAINT rail_submission_outcome_check
        CHECK (outcome IN ('ACKED', 'REJECTED', 'TIMEOUT', 'FENCED'))`);
    await q.query(`ALTER TABLE rail_submission ALTER COLUMN outcome TYPE varchar(8)`);
  }
}
