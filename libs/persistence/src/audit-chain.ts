import { createHash } from 'node:crypto';

/**
 * Tamper-evident audit chains (docs/audit.md). Each kept record carries its
 * place in a per-chain sequence and a hash over its canonical content and the
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
  readonly seqColumn: string;
  readonly hashColumn: string;
  readonly columns: readonly (readonly [name: string, kind: ColumnKind])[];
  /** The order existing rows are back-filled in. */
  readonly backfillOrder: string;
  /** Which rows belong to the chain (all, when absent). */
  readonly memberWhere?: string;
}

/** The hash the first link chains to. */
export const CHAIN_GENESIS = '0'.repeat(64);

/**
 * One lock per database serialises every chained append until commit: the
 * head a trigger reads is then always the committed last link, and two chains
 * of one database can never be locked in opposite orders. Keys: 'dloc', 1.
 */
export const CHAIN_LOCK_SQL = 'PERFORM pg_advisory_xact_lock(1684828003, 1)';

const REVOCATION: ChainSpec = {
  chain: 'lock_revocation',
  database: 'lockdb',
  table: 'lock_revocation',
  idColumn: 'revocation_id',
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
};

const TRANSITION: ChainSpec = {
  chain: 'payout_transition',
  database: 'paydb',
  table: 'payout_transition',
  idColumn: 'transition_id',
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
};

const LEDGER: ChainSpec = {
  chain: 'ledger_entry',
  database: 'paydb',
  table: 'ledger_entry',
  idColumn: 'entry_id',
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
};

/** A rail attempt as written before the rail call: immutable by the proxydb guard. */
const RAIL_INTENT: ChainSpec = {
  chain: 'rail_submission',
  database: 'proxydb',
  table: 'rail_submission',
  idColumn: 'submission_id',
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
};

/** Its outcome, recorded once after the call: a second chain, in the order outcomes were recorded. */
const RAIL_OUTCOME: ChainSpec = {
  chain: 'rail_submission_outcome',
  database: 'proxydb',
  table: 'rail_submission',
  idColumn: 'submission_id',
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
