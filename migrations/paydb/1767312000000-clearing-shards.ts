import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Lets the payout-clearing account of a currency be split into shards
 * (`clearing-<CUR>-NN`, PAYMENT_CLEARING_SHARDS in payment-resource), so that
 * postings of different customer accounts do not all wait on one balance row.
 * Funding stays one account per currency; clearing accounts are held to their
 * naming scheme instead of to "one per currency". Every shard is an ordinary
 * account: balance = ledger sum and zero-sum groups hold per row as before.
 */
export class ClearingShards1767312000000 implements MigrationInterface {
  name = 'ClearingShards1767312000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX account_system_per_currency`);
    await q.query(
      `CREATE UNIQUE INDEX account_funding_per_currency ON account (currency) WHERE kind = 'FUNDING'`,
    );
    await q.query(`
      ALTER TABLE account ADD CONSTRAINT account_clearing_id_scheme
        CHECK (kind <> 'CLEARING' OR account_id ~ ('^clearing-' || currency || '(-[0-9]{2})?$'))`);
  }

  /** Fails (and changes nothing) once a currency has more than one clearing account. */
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE account DROP CONSTRAINT account_clearing_id_scheme`);
    await q.query(`DROP INDEX account_funding_per_currency`);
    await q.query(
      `CREATE UNIQUE INDEX account_system_per_currency ON account (kind, currency) WHERE kind <> 'CUSTOMER'`,
    );
  }
}
