import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each rail attempt keeps the grant proof it was admitted on (docs/rail.md,
 * "proxydb schema"; docs/reconciler.md, `submission_grant_proven`), so the
 * reconciler can verify offline that every submission had a grant (INV-07).
 * - `grant_proof`: the X-Grant-Proof as the proxy verified it, written with the
 *   intent in the admission statement; NULL where none was kept.
 * - `grant_proof_kept`: false on the rows written before this migration (the
 *   column is added with that default, which rewrites nothing), true on every
 *   row after: the reconciler judges the kept ones, so history from before the
 *   proofs were kept is not reported as missing them.
 * Both are immutable like the rest of the intent. They stay outside the intent
 * chain (docs/audit.md): the chain's content is fixed for the rows it already
 * hashed, and a proof needs no chain, it is signed.
 */
export class GrantProofKept1796832000000 implements MigrationInterface {
  name = 'GrantProofKept1796832000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE rail_submission ADD COLUMN grant_proof text NULL`);
    await q.query(
      `ALTER TABLE rail_submission ADD COLUMN grant_proof_kept boolean NOT NULL DEFAULT false`,
    );
    await q.query(`ALTER TABLE rail_submission ALTER COLUMN grant_proof_kept SET DEFAULT true`);
    await q.query(`
      CREATE FUNCTION rail_submission_proof_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (NEW.grant_proof, NEW.grant_proof_kept) IS DISTINCT FROM (OLD.grant_proof, OLD.grant_proof_kept) THEN
          RAISE EXCEPTION 'rail_submission % grant proof is immutable', OLD.submission_id
            USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER rail_submission_proof_immutable BEFORE UPDATE ON rail_submission
      FOR EACH ROW EXECUTE FUNCTION rail_submission_proof_immutable()`);
    await q.query(
      `ALTER TABLE rail_submission ENABLE ALWAYS TRIGGER rail_submission_proof_immutable`,
    );
  }

  /** Fails (and changes nothing) once a proof is kept: it is the evidence of a grant, never dropped. */
  async down(q: QueryRunner): Promise<void> {
    const kept: { n: string }[] = await q.query(
      `SELECT count(*)::text AS n FROM rail_submission WHERE grant_proof IS NOT NULL`,
    );
    if (kept[0].n !== '0') {
      throw new Error(
        `refusing to revert: ${kept[0].n} rail_submission row(s) keep a grant proof and the ` +
          'older schema cannot hold them; rail attempts are never deleted',
      );
    }
    await q.query(`DROP TRIGGER rail_submission_proof_immutable ON rail_submission`);
    await q.query(`DROP FUNCTION rail_submission_proof_immutable()`);
    await q.query(
      `ALTER TABLE rail_submission DROP COLUMN grant_proof_kept, DROP COLUMN grant_proof`,
    );
  }
}
