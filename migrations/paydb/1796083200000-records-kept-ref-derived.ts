import type { MigrationInterface, QueryRunner } from 'typeorm';

const APPEND_ONLY = ['ledger_entry', 'payout_transition'];

/**
 * Records kept, and the rail reference the system's (docs/rail.md):
 * - `ledger_entry` and `payout_transition` already refused UPDATE and row
 *   DELETE (`reject_mutation`, 1767225600000), `ledger_entry` also TRUNCATE.
 *   Both now get a statement-level trigger refusing every DELETE and TRUNCATE
 *   (even one matching no row), and all their guards fire `ALWAYS`, so
 *   `session_replication_role = replica` does not switch them off.
 * - `payout.client_ref` is held to `railClientRef(payout_id)` (payout-contract):
 *   `po-` and the lower-case id. Rows that differ only in case (an upper-case
 *   id given to the old fixture code) are normalised first; any other value
 *   makes this migration fail, for a human to look at.
 */
export class RecordsKeptRefDerived1796083200000 implements MigrationInterface {
  name = 'RecordsKeptRefDerived1796083200000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of APPEND_ONLY) {
      await q.query(`
        CREATE TRIGGER ${table}_never_removed BEFORE DELETE OR TRUNCATE ON ${table}
        FOR EACH STATEMENT EXECUTE FUNCTION reject_mutation()`);
      await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${table}_never_removed`);
      await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${table}_append_only`);
    }
    await q.query(`ALTER TABLE ledger_entry ENABLE ALWAYS TRIGGER ledger_entry_no_truncate`);
    await q.query(`
      UPDATE payout SET client_ref = 'po-' || payout_id::text
       WHERE client_ref <> 'po-' || payout_id::text AND lower(client_ref) = 'po-' || payout_id::text`);
    await q.query(`
      ALTER TABLE payout ADD CONSTRAINT payout_client_ref_derived
        CHECK (client_ref = 'po-' || payout_id::text)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payout DROP CONSTRAINT payout_client_ref_derived`);
    await q.query(`ALTER TABLE ledger_entry ENABLE TRIGGER ledger_entry_no_truncate`);
    for (const table of APPEND_ONLY) {
      await q.query(`ALTER TABLE ${table} ENABLE TRIGGER ${table}_append_only`);
      await q.query(`DROP TRIGGER ${table}_never_removed ON ${table}`);
    }
  }
}
