import type { MigrationInterface, QueryRunner } from 'typeorm';
import { assertDestructiveDownAllowed } from '../destructive-down';

/**
 * paydb (docs/operations.md): accounts carrying the authoritative fence, payouts and
 * their state machine (docs/payment-resource.md), the append-only double-entry ledger (INV-03),
 * idempotency records (docs/contract.md) and the transition audit log (FR-30).
 */
export class PaydbSchema1767225600000 implements MigrationInterface {
  name = 'PaydbSchema1767225600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE account (
        account_id      text        PRIMARY KEY CHECK (account_id ~ '^[A-Za-z0-9._-]{1,64}$'),
        kind            text        NOT NULL CHECK (kind IN ('CUSTOMER', 'CLEARING', 'FUNDING')),
        currency        char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        -- A cached projection of the ledger, updated in the same transaction as the entries.
        balance_minor   bigint      NOT NULL DEFAULT 0,
        -- Highest token ever accepted for this account (INV-05); never decreases.
        fence           bigint      NOT NULL DEFAULT 0 CHECK (fence >= 0),
        -- The payout whose critical section set the fence: an equal token may only continue it.
        fence_payout_id uuid        NULL,
        version         integer     NOT NULL DEFAULT 0,
        created_at      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
        updated_at      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
      )`);
    // One clearing and one funding account per currency.
    await q.query(
      `CREATE UNIQUE INDEX account_system_per_currency ON account (kind, currency) WHERE kind <> 'CUSTOMER'`,
    );
    // Defence in depth for INV-04/05: whatever the SQL above it, a fence never goes backwards.
    await q.query(`
      CREATE FUNCTION account_fence_never_decreases() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.fence < OLD.fence THEN
          RAISE EXCEPTION 'account % fence would decrease from % to %', OLD.account_id, OLD.fence, NEW.fence
            USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER account_fence_never_decreases BEFORE UPDATE OF fence ON account
      FOR EACH ROW EXECUTE FUNCTION account_fence_never_decreases()`);

    await q.query(`
      CREATE TABLE payout (
        payout_id       uuid        PRIMARY KEY,
        account_id      text        NOT NULL REFERENCES account (account_id),
        amount_minor    bigint      NOT NULL CHECK (amount_minor > 0),
        currency        char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        beneficiary_ref text        NOT NULL CHECK (length(beneficiary_ref) BETWEEN 1 AND 128),
        -- What the rail sees; derived from the payout id, never regenerated.
        client_ref      text        NOT NULL UNIQUE,
        state           text        NOT NULL DEFAULT 'PENDING' CHECK (state IN (
                          'PENDING', 'CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED', 'RAIL_AMBIGUOUS',
                          'POSTED', 'FAILED', 'ABANDONED')),
        attempt_count   integer     NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
        claimed_by      text        NULL,
        -- Diagnostic only: the token of the last fenced write; never a guard.
        token_stamp     bigint      NULL,
        submission_id   uuid        NULL,
        rail_reference  text        NULL,
        failure_reason  text        NULL,
        created_at      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
        claimed_at      timestamptz NULL,
        submitted_at    timestamptz NULL,
        ambiguous_at    timestamptz NULL,
        settled_at      timestamptz NULL,
        updated_at      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
      )`);
    await q.query(`CREATE INDEX payout_by_state ON payout (state, created_at, payout_id)`);
    await q.query(
      `CREATE INDEX payout_by_account_state ON payout (account_id, state, created_at, payout_id)`,
    );

    await q.query(`
      CREATE TABLE ledger_entry (
        entry_id                uuid        PRIMARY KEY,
        txn_group_id            uuid        NOT NULL,
        account_id              text        NOT NULL REFERENCES account (account_id),
        -- Signed: negative is a debit, positive a credit.
        amount_minor            bigint      NOT NULL CHECK (amount_minor <> 0),
        counterparty_account_id text        NOT NULL REFERENCES account (account_id),
        payout_id               uuid        NULL REFERENCES payout (payout_id),
        -- The token the movement was posted under (NULL for opening balances).
        fence                   bigint      NULL,
        kind                    text        NOT NULL CHECK (kind IN ('OPENING_BALANCE', 'PAYOUT')),
        created_at              timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
    await q.query(`CREATE INDEX ledger_entry_by_account ON ledger_entry (account_id)`);
    await q.query(`CREATE INDEX ledger_entry_by_group ON ledger_entry (txn_group_id)`);
    // A payout is posted at most once, whatever the application does.
    await q.query(
      `CREATE UNIQUE INDEX ledger_entry_payout_once ON ledger_entry (payout_id, account_id) WHERE payout_id IS NOT NULL`,
    );
    await q.query(`
      CREATE FUNCTION reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION '% is append-only: % rejected', TG_TABLE_NAME, TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await q.query(`
      CREATE TRIGGER ledger_entry_append_only BEFORE UPDATE OR DELETE ON ledger_entry
      FOR EACH ROW EXECUTE FUNCTION reject_mutation()`);
    await q.query(`
      CREATE TRIGGER ledger_entry_no_truncate BEFORE TRUNCATE ON ledger_entry
      FOR EACH STATEMENT EXECUTE FUNCTION reject_mutation()`);
    // INV-03, asserted by the database at every commit: each group sums to zero.
    await q.query(`
      CREATE FUNCTION ledger_group_balances() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE total numeric;
      BEGIN
        SELECT sum(amount_minor) INTO total FROM ledger_entry WHERE txn_group_id = NEW.txn_group_id;
        IF total <> 0 THEN
          RAISE EXCEPTION 'ledger group % sums to %, not zero', NEW.txn_group_id, total
            USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE CONSTRAINT TRIGGER ledger_group_balances AFTER INSERT ON ledger_entry
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_group_balances()`);

    await q.query(`
      CREATE TABLE idempotency_record (
        operation       text        NOT NULL,
        idempotency_key text        NOT NULL,
        token           bigint      NOT NULL,
        request_hash    text        NOT NULL,
        payout_id       uuid        NOT NULL,
        status_code     integer     NULL,
        response_body   text        NULL,
        created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (operation, idempotency_key, token)
      )`);

    await q.query(`
      CREATE TABLE payout_transition (
        transition_id  bigserial   PRIMARY KEY,
        payout_id      uuid        NOT NULL REFERENCES payout (payout_id),
        from_state     text        NOT NULL,
        to_state       text        NOT NULL,
        event          text        NOT NULL,
        actor          text        NOT NULL,
        token          bigint      NULL,
        submission_id  uuid        NULL,
        rail_reference text        NULL,
        reason         text        NULL,
        created_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp())
      )`);
    await q.query(
      `CREATE INDEX payout_transition_by_payout ON payout_transition (payout_id, transition_id)`,
    );
    await q.query(`
      CREATE TRIGGER payout_transition_append_only BEFORE UPDATE OR DELETE ON payout_transition
      FOR EACH ROW EXECUTE FUNCTION reject_mutation()`);
  }

  async down(q: QueryRunner): Promise<void> {
    assertDestructiveDownAllowed("drop account.fence, the account guard's memory of every token");
    await q.query(`DROP TABLE payout_transition`);
    await q.query(`DROP TABLE idempotency_record`);
    await q.query(`DROP TABLE ledger_entry`);
    await q.query(`DROP TABLE payout`);
    await q.query(`DROP TABLE account`);
    await q.query(`DROP FUNCTION ledger_group_balances()`);
    await q.query(`DROP FUNCTION reject_mutation()`);
    await q.query(`DROP FUNCTION account_fence_never_decreases()`);
  }
}
