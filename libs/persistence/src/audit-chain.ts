import { createHash } from 'node:crypto';

/**
 * Tamper-evident audit chains (docs/audit.md). Each kept record carries its
 * place in its partition's sequence (one chain per payout, account, lock key) and a hash over its canonical content and the
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
  readonly database: 'lockdb' | 'paydb' | 'proxydb';
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

const TRANSITION: ChainSpec = {
  chain: 'payout_transition',
  database: 'paydb',
  table: 'payout_transition',
  idColumn: 'transition_id',
  partitionColumn: 'payout_id',
  partitionLock: { rowOf: 'payout', keyColumn: 'payout_id' },
  seqColumn: 'chain_seq',
  hashColumn: 'chain_hash',
  columns: [
    ['transition_id', 'value'],
    ['payout_id', 'value'],
    ['from_state', 'value'],
    ['to_state', 'value'],
    ['event', 'value'],
    ['actor', 'value'],
    ['token', 'value'],
    ['submission_id', 'value'],
    ['rail_reference', 'value'],
    ['reason', 'value'],
    ['created_at', 'instant'],
  ],
  backfillOrder: 'transition_id',
  appendOrder: { time: 'created_at', key: [['transition_id', 'bigint']] },
  // A payout that left PENDING has a chain, and its last link leads to the state it is in.
  coverSql: `SELECT p.payout_id::text AS id, p.state AS expected,
                    coalesce(last.to_state, 'no transition') AS found
               FROM payout p
               LEFT JOIN LATERAL (SELECT t.to_state FROM payout_transition t
                                   WHERE t.payout_id = p.payout_id AND t.chain_seq IS NOT NULL
                                   ORDER BY t.chain_seq DESC LIMIT 1) last ON true
              WHERE p.state <> 'PENDING' AND last.to_state IS DISTINCT FROM p.state`,
  // The same, for payouts in flight (payout_by_state) and those terminal since $1
  // (payout_terminal_by_time, its predicate repeated so the planner can use it).
  coverRecentSql: `SELECT p.payout_id::text AS id, p.state AS expected,
                          coalesce(last.to_state, 'no transition') AS found
                     FROM (SELECT payout_id, state FROM payout
                            WHERE state IN ('CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED', 'RAIL_AMBIGUOUS')
                           UNION ALL
                           SELECT payout_id, state FROM payout
                            WHERE state IN ('POSTED', 'FAILED', 'ABANDONED')
                              AND COALESCE(settled_at, updated_at) >= $1::timestamptz) p
                     LEFT JOIN LATERAL (SELECT t.to_state FROM payout_transition t
                                         WHERE t.payout_id = p.payout_id AND t.chain_seq IS NOT NULL
                                         ORDER BY t.chain_seq DESC LIMIT 1) last ON true
                    WHERE last.to_state IS DISTINCT FROM p.state`,
};

const LEDGER: ChainSpec = {
  chain: 'ledger_entry',
  database: 'paydb',
  table: 'ledger_entry',
  idColumn: 'entry_id',
  partitionColumn: 'account_id',
  // The posting statement locks these rows anyway (its UPDATE account); the seal takes them first.
  partitionLock: { rowOf: 'account', keyColumn: 'account_id' },
  seqColumn: 'chain_seq',
  hashColumn: 'chain_hash',
  columns: [
    ['entry_id', 'value'],
    ['txn_group_id', 'value'],
    ['account_id', 'value'],
    ['amount_minor', 'value'],
    ['counterparty_account_id', 'value'],
    ['payout_id', 'value'],
    ['fence', 'value'],
    ['kind', 'value'],
    ['created_at', 'instant'],
  ],
  backfillOrder: 'created_at, entry_id',
  appendOrder: {
    time: 'created_at',
    key: [
      ['created_at', 'timestamptz'],
      ['entry_id', 'uuid'],
    ],
  },
};

/** A rail attempt as written before the rail call: immutable by the proxydb guard. */
const RAIL_INTENT: ChainSpec = {
  chain: 'rail_submission',
  database: 'proxydb',
  table: 'rail_submission',
  idColumn: 'submission_id',
  partitionColumn: 'payout_id',
  partitionLock: { advisoryKey: 1684828004 },
  seqColumn: 'chain_seq',
  hashColumn: 'chain_hash',
  columns: [
    ['submission_id', 'value'],
    ['payout_id', 'value'],
    ['account_id', 'value'],
    ['presented_token', 'value'],
    ['owner_id', 'value'],
    ['idempotency_key', 'value'],
    ['client_ref', 'value'],
    ['amount_minor', 'value'],
    ['currency', 'value'],
    ['beneficiary_ref', 'value'],
    ['fencing_enforced', 'value'],
    ['created_at', 'instant'],
  ],
  backfillOrder: 'created_at, submission_id',
  appendOrder: {
    time: 'created_at',
    key: [
      ['created_at', 'timestamptz'],
      ['submission_id', 'uuid'],
    ],
  },
};

/** Its outcome, recorded once after the call: a second chain, in the order outcomes were recorded. */
const RAIL_OUTCOME: ChainSpec = {
  chain: 'rail_submission_outcome',
  database: 'proxydb',
  table: 'rail_submission',
  idColumn: 'submission_id',
  partitionColumn: 'payout_id',
  partitionLock: { advisoryKey: 1684828005 },
  seqColumn: 'outcome_seq',
  hashColumn: 'outcome_hash',
  columns: [
    ['submission_id', 'value'],
    ['outcome', 'value'],
    ['rail_reference', 'value'],
    ['error_code', 'value'],
    ['highest_token_seen', 'value'],
    ['resolved_at', 'instant'],
  ],
  backfillOrder: 'resolved_at, submission_id',
  memberWhere: 'outcome IS NOT NULL',
  appendOrder: {
    time: 'resolved_at',
    key: [
      ['resolved_at', 'timestamptz'],
      ['submission_id', 'uuid'],
    ],
  },
};

export const AUDIT_CHAINS = {
  lockdb: [REVOCATION],
  paydb: [TRANSITION, LEDGER],
  proxydb: [RAIL_INTENT, RAIL_OUTCOME],
} as const satisfies Record<ChainSpec['database'], readonly ChainSpec[]>;

export const AUDIT_CHAIN_NAMES = Object.values(AUDIT_CHAINS).flatMap((specs) =>
  specs.map((s) => s.chain),
);

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
