import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The reconciler's rail sweep walks terminal payouts in (terminal time,
 * payout id) order (apps/reconciler/src/detective/rail-sweep-queries.ts);
 * without this index every pass reads the whole payout table. On a large
 * paydb, build it first without a write lock (docs/operations.md, "Migrate");
 * this migration then finds it and does nothing.
 */
export class SweepIndex1796140800000 implements MigrationInterface {
  name = 'SweepIndex1796140800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX IF NOT EXISTS payout_terminal_by_time
          ON payout ((COALESCE(settled_at, updated_at)), payout_id)
       WHERE state IN ('POSTED', 'FAILED', 'ABANDONED')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS payout_terminal_by_time`);
  }
}
