import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The rail attempts' append orders (docs/scale.md): intents by creation,
 * outcomes by resolution. The audit chains' checkpointed pass and the
 * detective checks read what was appended since their last pass on these,
 * instead of the whole table. On a large proxydb, build them first without a
 * write lock (docs/operations.md, "Migrate"); this migration then does nothing.
 */
export class HistoryBounded1796572800000 implements MigrationInterface {
  name = 'HistoryBounded1796572800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX IF NOT EXISTS rail_submission_by_time
          ON rail_submission (created_at, submission_id)`);
    await q.query(`
      CREATE INDEX IF NOT EXISTS rail_submission_outcome_by_time
          ON rail_submission (resolved_at, submission_id) WHERE outcome IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS rail_submission_outcome_by_time`);
    await q.query(`DROP INDEX IF EXISTS rail_submission_by_time`);
  }
}
