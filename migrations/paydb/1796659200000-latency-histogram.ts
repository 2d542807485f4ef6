import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console's all-time created → POSTED latency without reading every POSTED
 * payout on each poll (docs/scale.md): a histogram of latencies in buckets
 * about 5 % wide (`payout_latency_bucket`: 20 per factor of e), kept like the
 * state counts of HistoryBounded1796572800000 — a trigger appends ±1 to
 * `payout_latency_delta` in the writing transaction, and the statistics read
 * folds the deltas into `payout_latency_count` (PayoutRepository.stats).
 */
export class LatencyHistogram1796659200000 implements MigrationInterface {
  name = 'LatencyHistogram1796659200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION payout_latency_bucket(ms double precision) RETURNS integer
      LANGUAGE sql IMMUTABLE AS
      'SELECT CASE WHEN ms < 1 THEN 0 ELSE floor(ln(ms) * 20)::integer + 1 END'`);
    await q.query(
      `CREATE TABLE payout_latency_count (bucket integer PRIMARY KEY, n bigint NOT NULL)`,
    );
    // No key, no index: writers only append here; the statistics read takes the rows away.
    await q.query(
      `CREATE TABLE payout_latency_delta (bucket integer NOT NULL, n integer NOT NULL)`,
    );
    await q.query(`
      CREATE FUNCTION payout_latency_tracked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.state = 'POSTED' THEN
          INSERT INTO payout_latency_delta (bucket, n) VALUES (payout_latency_bucket(
            extract(epoch FROM COALESCE(OLD.settled_at, OLD.updated_at) - OLD.created_at) * 1000), -1);
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.state = 'POSTED' THEN
          INSERT INTO payout_latency_delta (bucket, n) VALUES (payout_latency_bucket(
            extract(epoch FROM COALESCE(NEW.settled_at, NEW.updated_at) - NEW.created_at) * 1000), 1);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER payout_latency_tracked AFTER INSERT OR DELETE ON payout
      FOR EACH ROW EXECUTE FUNCTION payout_latency_tracked()`);
    await q.query(`
      CREATE TRIGGER payout_latency_moved AFTER UPDATE OF state ON payout
      FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
      EXECUTE FUNCTION payout_latency_tracked()`);
    await q.query(`ALTER TABLE payout ENABLE ALWAYS TRIGGER payout_latency_tracked`);
    await q.query(`ALTER TABLE payout ENABLE ALWAYS TRIGGER payout_latency_moved`);
    await q.query(`LOCK TABLE payout IN SHARE MODE`);
    await q.query(`
      INSERT INTO payout_latency_count (bucket, n)
      SELECT payout_latency_bucket(
               extract(epoch FROM COALESCE(settled_at, updated_at) - created_at) * 1000), count(*)
        FROM payout WHERE state = 'POSTED' GROUP BY 1`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER payout_latency_moved ON payout`);
    await q.query(`DROP TRIGGER payout_latency_tracked ON payout`);
    await q.query(`DROP FUNCTION payout_latency_tracked()`);
    await q.query(`DROP TABLE payout_latency_delta`);
    await q.query(`DROP TABLE payout_latency_count`);
    await q.query(`DROP FUNCTION payout_latency_bucket(double precision)`);
  }
}
