import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What lets an admission be one statement in autocommit (docs/rail.md,
 * "Admission in one round trip"): the statement calls this when the request is
 * not admitted (a twin, a stale token, a payout with a live submission), so the
 * error undoes everything the statement wrote and the proxy answers through
 * the transactional way instead. The SQLSTATE is the proxy's own
 * (`NOT_ADMITTED_SQLSTATE` in submission.repository.ts).
 */
export class AdmissionAtOnce1796745600000 implements MigrationInterface {
  name = 'AdmissionAtOnce1796745600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION rail_not_admitted() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        RAISE EXCEPTION 'submission not admitted in one statement; nothing was written'
          USING ERRCODE = 'DLA01';
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION rail_not_admitted()`);
  }
}
