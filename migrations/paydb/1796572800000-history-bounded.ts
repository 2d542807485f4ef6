import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reads that cost the live work, not the history (docs/scale.md):
 * - `payout_state_count` holds how many payouts are in each state. A trigger
 *   on `payout` appends each change to `payout_state_delta` in the writing
 *   transaction (an INSERT: no row every writer waits on), and the statistics
 *   read folds the deltas into the counts (PayoutRepository.stats), so a poll
 *   reads a handful of rows instead of counting the table.
 * - `ledger_entry_by_time` is the ledger's append order: the audit chain's
 *   checkpointed pass and the detective checks read what was appended since.
 * On a large paydb, build the index first without a write lock (docs/operations.md, "Migrate").
 */
export class HistoryBounded1796572800000 implements MigrationInterface {
  name = 'HistoryBounded1796572800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE payout_state_count (state text PRIMARY KEY, n bigint NOT NULL)`);
    // No key, no index: writers only append here; the statistics read takes the rows away.
    await q.query(`CREATE TABLE payout_state_delta (state text NOT NULL, n integer NOT NULL)`);
    await q.query(`
      CREATE FUNCTION payout_state_counted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          INSERT INTO payout_state_delta (state, n) VALUES (OLD.state, -1);
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
          INSERT INTO payout_state_delta (state, n) VALUES (NEW.state, 1);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER payout_state_counted AFTER INSERT OR DELETE ON payout
      FOR EACH ROW EXECUTE FUNCTION payout_state_counted()`);
    await q.query(`
      CREATE TRIGGER payout_state_moved AFTER UPDATE OF state ON payout
      FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
      EXECUTE FUNCTION payout_state_counted()`);
    // Counts need no replication mode to stay true: the triggers fire ALWAYS.
    await q.query(`ALTER TABLE payout ENABLE ALWAYS TRIGGER payout_state_counted`);
    await q.query(`ALTER TABLE payout ENABLE ALWAYS TRIGGER payout_state_moved`);
    // The payouts already there (the migration's transaction holds them still meanwhile).
    await q.query(`LOCK TABLE payout IN SHARE MODE`);
    await q.query(
      `INSERT INTO payout_state_count (state, n) SELECT state, count(*) FROM payout GROUP BY state`,
    );
    await q.query(
      `CREATE INDEX IF NOT EXISTS ledger_entry_by_time ON ledger_entry (created_at, entry_id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS ledger_entry_by_time`);
    await q.query(`DROP TRIGGER payout_state_moved ON payout`);
    await q.query(`DROP TRIGGER payout_state_counted ON payout`);
    await q.query(`DROP FUNCTION payout_state_counted()`);
    await q.query(`DROP TABLE payout_state_delta`);
    await q.query(`DROP TABLE payout_state_count`);
  }
}
