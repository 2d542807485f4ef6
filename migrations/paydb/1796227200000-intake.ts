import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The payouts API (docs/payment-resource.md, "Creating accounts, deposits and payouts"):
 * - `intake_request` remembers each creating request by operation and
 *   `Idempotency-Key`: the body's fingerprint, the resource it made, and the
 *   answer given, so a retry gets the same answer and a different body under
 *   the same key is refused. Its row is inserted first in the creating
 *   transaction, so a concurrent duplicate waits on it and then replays.
 * - A ledger movement may be a DEPOSIT (funding account to customer).
 */
export class Intake1796227200000 implements MigrationInterface {
  name = 'Intake1796227200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE intake_request (
        operation        text        NOT NULL
                         CHECK (operation IN ('create_account', 'deposit', 'create_payout')),
        idempotency_key  text        NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 128),
        request_hash     text        NOT NULL,
        resource_id      text        NOT NULL,
        status_code      int         NULL,
        response_body    text        NULL,
        created_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (operation, idempotency_key)
      )`);
    await q.query(`ALTER TABLE ledger_entry DROP CONSTRAINT ledger_entry_kind_check`);
    await q.query(`
      ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_kind_check
        CHECK (kind IN ('OPENING_BALANCE', 'PAYOUT', 'DEPOSIT'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Deposits already made stay in the ledger (it is append-only): the old
    // check comes back for new rows only (NOT VALID skips the existing ones).
    await q.query(`ALTER TABLE ledger_entry DROP CONSTRAINT ledger_entry_kind_check`);
    await q.query(`
      ALTER TABLE ledger_entry ADD CONSTRAINT ledger_entry_kind_check
        CHECK (kind IN ('OPENING_BALANCE', 'PAYOUT')) NOT VALID`);
    await q.query(`DROP TABLE intake_request`);
  }
}
