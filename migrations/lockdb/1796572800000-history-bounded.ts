import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The revocations' append order (docs/scale.md): the audit chain's
 * checkpointed pass reads what was appended since its last pass on it.
 */
export class HistoryBounded1796572800000 implements MigrationInterface {
  name = 'HistoryBounded1796572800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE INDEX IF NOT EXISTS lock_revocation_by_time
          ON lock_revocation (revoked_at, revocation_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS lock_revocation_by_time`);
  }
}
