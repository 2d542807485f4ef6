import type { QueryRunner } from 'typeorm';
import {
  CHAIN_GENESIS,
  chainContentSql,
  linkHashSql,
  partitionLockSql,
  type ChainSpec,
} from '@dlock/persistence/audit';

/**
 * The SQL the audit-chain migrations share (docs/audit.md). A chained table
 * gets `<seq>` (its place in its partition's chain, 1, 2, …, unique per
 * partition) and `<hash>`; the rows already there are chained per partition
 * in `backfillOrder`; afterwards a BEFORE trigger (`<table>_seal`) appends
 * every new row to its partition's chain.
 */

/** PL/pgSQL that appends NEW to its partition's chain (variables prev_seq, prev_hash declared by the caller). */
export function appendLinkSql(spec: ChainSpec): string {
  const { table, partitionColumn: part, seqColumn: seq, hashColumn: hash } = spec;
  // READ COMMITTED: the SELECT after the lock sees the partition's committed last link.
  return `
    ${partitionLockSql(spec, 'NEW')};
    prev_seq := NULL;
    prev_hash := NULL;
    SELECT ${seq}, ${hash} INTO prev_seq, prev_hash FROM ${table}
     WHERE ${part} = NEW.${part} AND ${seq} IS NOT NULL ORDER BY ${seq} DESC LIMIT 1;
    NEW.${seq} := coalesce(prev_seq, 0) + 1;
    NEW.${hash} := ${linkHashSql(`coalesce(prev_hash, '${CHAIN_GENESIS}')`, chainContentSql(spec, 'NEW'))};`;
}

/**
 * Adds the chain columns and chains the existing rows, with the table's
 * append-only `guard` trigger off for the back-fill's own UPDATEs only (the
 * migration's transaction holds the table exclusively meanwhile).
 */
export async function addChain(q: QueryRunner, spec: ChainSpec, guard: string): Promise<void> {
  const { table, partitionColumn: part, seqColumn: seq, hashColumn: hash, idColumn: id } = spec;
  await q.query(
    `ALTER TABLE ${table} ADD COLUMN ${seq} bigint NULL, ADD COLUMN ${hash} char(64) NULL`,
  );
  await q.query(`ALTER TABLE ${table} DISABLE TRIGGER ${guard}`);
  await q.query(`
    DO $$
    DECLARE r record; prev text; n bigint; at text;
    BEGIN
      FOR r IN SELECT * FROM ${table} ${spec.memberWhere ? `WHERE ${spec.memberWhere}` : ''}
               ORDER BY ${part}, ${spec.backfillOrder} LOOP
        IF at IS DISTINCT FROM r.${part}::text THEN
          at := r.${part}::text; prev := '${CHAIN_GENESIS}'; n := 0;
        END IF;
        n := n + 1;
        prev := ${linkHashSql('prev', chainContentSql(spec, 'r', 'n'))};
        UPDATE ${table} SET ${seq} = n, ${hash} = prev WHERE ${id} = r.${id};
      END LOOP;
    END $$`);
  await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${guard}`);
  // Also the index the seal reads its partition's head with and the verifier walks.
  await q.query(
    `ALTER TABLE ${table} ADD CONSTRAINT ${table}_${seq}_unique UNIQUE (${part}, ${seq})`,
  );
  if (spec.memberWhere) {
    await q.query(`
      ALTER TABLE ${table} ADD CONSTRAINT ${table}_${seq}_member
        CHECK ((${spec.memberWhere}) = (${seq} IS NOT NULL AND ${hash} IS NOT NULL))`);
  } else {
    await q.query(
      `ALTER TABLE ${table} ALTER COLUMN ${seq} SET NOT NULL, ALTER COLUMN ${hash} SET NOT NULL`,
    );
  }
}

/** Installs `<table>_seal` from its PL/pgSQL body; fires ALWAYS, so replication mode still chains. */
export async function addSeal(
  q: QueryRunner,
  table: string,
  on: string,
  body: string,
): Promise<void> {
  await q.query(`
    CREATE FUNCTION ${table}_seal() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE prev_seq bigint; prev_hash text;
    BEGIN${body}
    END $$`);
  // Named to sort after the table's other BEFORE row triggers: it hashes the row they let through.
  await q.query(
    `CREATE TRIGGER ${table}_seal BEFORE ${on} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_seal()`,
  );
  await q.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${table}_seal`);
}

/** Removes the seal and the chain columns; the records themselves are untouched. */
export async function dropChains(
  q: QueryRunner,
  table: string,
  specs: readonly ChainSpec[],
): Promise<void> {
  await q.query(`DROP TRIGGER ${table}_seal ON ${table}`);
  await q.query(`DROP FUNCTION ${table}_seal()`);
  for (const spec of specs) {
    await q.query(
      `ALTER TABLE ${table} DROP COLUMN ${spec.seqColumn}, DROP COLUMN ${spec.hashColumn}`,
    );
  }
}
