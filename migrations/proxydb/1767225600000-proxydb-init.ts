import type { MigrationInterface, QueryRunner } from 'typeorm';
import { assertDestructiveDownAllowed } from '../destructive-down';

/**
 * proxydb, owned by rail-proxy alone (docs/operations.md):
 * - rail_high_water: fence point (c), one monotonic mark per account.
 * - rail_submission: intent-then-outcome record per attempt (FR-18, FR-19).
 * - rail_idempotency: stored responses per (X-Idempotency-Key, presented token).
 */
export class ProxydbInit1767225600000 implements MigrationInterface {
  name = 'ProxydbInit1767225600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE rail_high_water (
        account_id    varchar(64) PRIMARY KEY,
        highest_token bigint      NOT NULL CHECK (highest_token > 0),
        updated_at    timestamptz NOT NULL DEFAULT now()
      )`);
    // The mark only ever rises and is never removed (INV-04's detective side lives in the checkers).
    await q.query(`
      CREATE FUNCTION rail_high_water_guard() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          RAISE EXCEPTION 'rail_high_water rows are never deleted' USING ERRCODE = 'restrict_violation';
        END IF;
        IF NEW.highest_token < OLD.highest_token OR NEW.account_id <> OLD.account_id THEN
          RAISE EXCEPTION 'rail_high_water must not decrease (% -> %)', OLD.highest_token, NEW.highest_token
            USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER rail_high_water_guard BEFORE UPDATE OR DELETE ON rail_high_water
      FOR EACH ROW EXECUTE FUNCTION rail_high_water_guard()`);

    await q.query(`
      CREATE TABLE rail_submission (
        submission_id      uuid         PRIMARY KEY,
        payout_id          uuid         NOT NULL,
        account_id         varchar(64)  NOT NULL,
        presented_token    bigint       NOT NULL CHECK (presented_token > 0),
        owner_id           varchar(64)  NOT NULL,
        idempotency_key    varchar(128) NOT NULL,
        client_ref         varchar(128) NOT NULL,
        amount_minor       bigint       NOT NULL CHECK (amount_minor > 0),
        currency           char(3)      NOT NULL,
        beneficiary_ref    varchar(128) NOT NULL,
        fencing_enforced   boolean      NOT NULL DEFAULT true,
        outcome            varchar(8)   NULL CHECK (outcome IN ('ACKED', 'REJECTED', 'TIMEOUT', 'FENCED')),
        rail_reference     varchar(128) NULL,
        error_code         varchar(64)  NULL,
        highest_token_seen bigint       NULL,
        created_at         timestamptz  NOT NULL DEFAULT now(),
        resolved_at        timestamptz  NULL,
        CHECK ((outcome IS NULL) = (resolved_at IS NULL)),
        CHECK (outcome IS DISTINCT FROM 'ACKED' OR rail_reference IS NOT NULL)
      )`);
    // FR-18: at most one live submission per payout. A FENCED row is a rejected
    // stale attempt and must not block the legitimate holder (docs/operations.md).
    // Rows written with the harness-only kill switch off are outside the index,
    // which is what lets the negative control produce a duplicate.
    await q.query(`
      CREATE UNIQUE INDEX rail_submission_one_live_per_payout ON rail_submission (payout_id)
      WHERE outcome IS DISTINCT FROM 'FENCED' AND fencing_enforced`);
    await q.query(
      `CREATE INDEX rail_submission_by_payout ON rail_submission (payout_id, created_at)`,
    );
    await q.query(`CREATE INDEX rail_submission_by_client_ref ON rail_submission (client_ref)`);
    // Written once as intent, resolved exactly once, then immutable. The only
    // delete allowed is withdrawing an unresolved intent (see docs/rail.md).
    await q.query(`
      CREATE FUNCTION rail_submission_guard() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          IF OLD.outcome IS NOT NULL THEN
            RAISE EXCEPTION 'resolved rail_submission % is never deleted', OLD.submission_id
              USING ERRCODE = 'restrict_violation';
          END IF;
          RETURN OLD;
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
      END $$`);
    await q.query(`
      CREATE TRIGGER rail_submission_guard BEFORE UPDATE OR DELETE ON rail_submission
      FOR EACH ROW EXECUTE FUNCTION rail_submission_guard()`);

    await q.query(`
      CREATE TABLE rail_idempotency (
        idempotency_key varchar(128) NOT NULL,
        presented_token bigint       NOT NULL,
        request_hash    char(64)     NOT NULL,
        submission_id   uuid         NULL,
        response        jsonb        NULL,
        created_at      timestamptz  NOT NULL DEFAULT now(),
        completed_at    timestamptz  NULL,
        PRIMARY KEY (idempotency_key, presented_token),
        CHECK ((response IS NULL) = (completed_at IS NULL))
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    assertDestructiveDownAllowed("drop rail_high_water, the rail guard's memory of every token");
    await q.query(`DROP TABLE rail_idempotency`);
    await q.query(`DROP TABLE rail_submission`);
    await q.query(`DROP FUNCTION rail_submission_guard()`);
    await q.query(`DROP TABLE rail_high_water`);
    await q.query(`DROP FUNCTION rail_high_water_guard()`);
  }
}
