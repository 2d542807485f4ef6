import { createHash } from 'node:crypto';

/**
 * Tamper-evident audit chains (docs/audit.md). Each kept record carries its
 * place in its partition's sequence (one chain per lock key, or whatever an app partitions by) and
 * a hash over its canonical content and the
 * previous link's hash. A BEFORE trigger computes them in PostgreSQL, so no
 * writer can forget it; the verifier below recomputes every hash in Node from
 * the columns, trusting nothing the database computed.
 *
 * The column lists ARE the canonical content. Changing one changes every hash
 * already written: only ever with a new migration that re-chains the table.
 */

/** How one column becomes text: its own text form, or a timestamp pinned to UTC and microseconds. */
export type ColumnKind = 'value' | 'instant';

export interface ChainSpec {
  /** The chain's name: a metric label, the first field of every link's content. */
  readonly chain: string;
  /** The database holding the table, as the app names it (its verifier connects by this name). */
  readonly database: string;
  readonly table: string;
  /** Names the row in a break report (never in a metric label). */
  readonly idColumn: string;
  /** One chain per value of this column: appends to different partitions never wait for each other. */
  readonly partitionColumn: string;
  /**
   * What the seal locks before reading the partition's head: the partition's
   * own row (one the writer already holds, so no new wait and no new lock
   * order), or else a transaction-scoped advisory lock keyed (chain, partition).
   */
  readonly partitionLock:
    { readonly rowOf: string; readonly keyColumn: string } | { readonly advisoryKey: number };
  readonly seqColumn: string;
  readonly hashColumn: string;
  readonly columns: readonly (readonly [name: string, kind: ColumnKind])[];
  /** The order existing rows of one partition are back-filled in. */
  readonly backfillOrder: string;
  /** Which rows belong to the chain (all, when absent). */
  readonly memberWhere?: string;
  /**
   * A query answering the records whose chain must exist but does not end as
   * they should ({id, expected, found}; the verifier adds the LIMIT): catches
   * a partition's chain deleted whole.
   */
  readonly coverSql?: string;
  /**
   * The order rows are appended in, on an index, for verifying only what was
   * appended since a checkpoint (verifyChainSince): the key columns with their
   * SQL types, and the column holding when the row was written.
   */
  readonly appendOrder: {
    readonly time: string;
    readonly key: readonly (readonly [name: string, type: string])[];
  };
  /**
   * {@link coverSql} for the partitions that can still change or changed since
   * `$1` (timestamptz): what a checkpointed pass checks, on indexes.
   */
  readonly coverRecentSql?: string;
}

/** The hash the first link chains to. */
export const CHAIN_GENESIS = '0'.repeat(64);

/**
 * The PL/pgSQL statement that serialises appends to NEW's partition until
 * commit, so the head the seal reads next is that partition's committed last
 * link. Only writers of the same partition wait (docs/audit.md).
 */
export function partitionLockSql(spec: ChainSpec, alias: string): string {
  const value = `${alias}.${spec.partitionColumn}`;
  const lock = spec.partitionLock;
  return 'rowOf' in lock
    ? `PERFORM 1 FROM ${lock.rowOf} WHERE ${lock.keyColumn} = ${value} FOR NO KEY UPDATE`
    : `PERFORM pg_advisory_xact_lock(${lock.advisoryKey}, hashtext(${value}::text))`;
}

const REVOCATION: ChainSpec = {
  chain: 'lock_revocation',
  database: 'lockdb',
  table: 'lock_revocation',
  idColumn: 'revocation_id',
  partitionColumn: 'lock_key',
  // The revocation already holds the lock_entry row; lock keys without one are not revoked.
  partitionLock: { advisoryKey: 1684828003 },
  seqColumn: 'chain_seq',
  hashColumn: 'chain_hash',
  columns: [
    ['revocation_id', 'value'],
    ['lock_key', 'value'],
    ['revoked_token', 'value'],
    ['new_token_floor', 'value'],
    ['operator', 'value'],
    ['reason', 'value'],
    ['holder_owner_id', 'value'],
    ['holder_session_id', 'value'],
    ['revoked_at', 'instant'],
  ],
  backfillOrder: 'revoked_at, revocation_id',
  appendOrder: {
    time: 'revoked_at',
    key: [
      ['revoked_at', 'timestamptz'],
      ['revocation_id', 'uuid'],
    ],
  },
};

/** The lock service's chain; every other chain is registered by the app that verifies it. */
export const LOCK_AUDIT_CHAINS: readonly ChainSpec[] = [REVOCATION];

const registeredChains = new Map<string, ChainSpec>(LOCK_AUDIT_CHAINS.map((s) => [s.chain, s]));

/**
 * Adds an app's chains to those `auditChains` answers (docs/audit.md), when its module loads or
 * its script starts. The same spec again is harmless; another spec under a known chain name
 * throws: the columns are the hashed content, so two meanings would report every link broken.
 */
export function registerAuditChains(specs: readonly ChainSpec[]): void {
  for (const spec of specs) {
    const known = registeredChains.get(spec.chain);
    if (known !== undefined && JSON.stringify(known) !== JSON.stringify(spec)) {
      throw new Error(`audit chain ${spec.chain} is already registered with another spec`);
    }
    registeredChains.set(spec.chain, spec);
  }
}

/** The chains registered for `database`, in registration order. */
export function auditChains(database: string): ChainSpec[] {
  return [...registeredChains.values()].filter((s) => s.database === database);
}

/** Every registered chain's name: the lock service's first, then in registration order. */
export function auditChainNames(): string[] {
  return [...registeredChains.keys()];
}

/**
 * The canonical content of a link as one SQL text expression over `alias`'s
 * columns: the chain name, the sequence number, then each column as
 * `<length>:<text>` or `-` for NULL, comma-separated. Length-prefixing makes
 * the encoding unambiguous whatever a value contains; timestamps are pinned
 * to UTC and microseconds so no session setting changes the text.
 */
export function chainContentSql(spec: ChainSpec, alias: string, seqExpr?: string): string {
  const fields = spec.columns.map(([name, kind]) => {
    const col = `${alias}.${name}`;
    const text =
      kind === 'instant'
        ? `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
        : `(${col})::text`;
    return `coalesce(length(${text})::text || ':' || ${text}, '-')`;
  });
  const seq = `(${seqExpr ?? `${alias}.${spec.seqColumn}`})::text`;
  return `concat_ws(',', '${spec.chain}', ${seq}, ${fields.join(', ')})`;
}

/** The SQL twin of {@link linkHash}. */
export function linkHashSql(prevExpr: string, contentExpr: string): string {
  return `encode(sha256(convert_to(${prevExpr} || E'\\n' || ${contentExpr}, 'UTF8')), 'hex')`;
}

/** sha256(previous hash, newline, content), lower-case hex. */
export function linkHash(prev: string, content: string): string {
  return createHash('sha256').update(`${prev}\n${content}`, 'utf8').digest('hex');
}
