import type { ChainSpec } from '@dlock/persistence/audit';
import { IN_FLIGHT_PAYOUT_STATES_SQL, TERMINAL_PAYOUT_STATES_SQL } from './payout-types';

/**
 * The payout services' audit chains (docs/audit.md): paydb's transitions and ledger, proxydb's
 * rail attempts and their outcomes. Their migrations seal the tables with these specs; the
 * reconciler and `npm run audit:verify` register them with `registerAuditChains` of
 * @dlock/persistence before they verify. The column lists ARE the canonical content: changing
 * one changes every hash already written, only ever with a new migration that re-chains the table.
 * Node built-ins only (`@dlock/payout-contract/audit-chains`), for the migrations.
 */

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
  // (payout_terminal_by_time, its predicate repeated so the planner can use it). Both lists come
  // from the states' one source (payout-types.ts), as the index's predicate does.
  coverRecentSql: `SELECT p.payout_id::text AS id, p.state AS expected,
                          coalesce(last.to_state, 'no transition') AS found
                     FROM (SELECT payout_id, state FROM payout
                            WHERE state IN ${IN_FLIGHT_PAYOUT_STATES_SQL}
                           UNION ALL
                           SELECT payout_id, state FROM payout
                            WHERE state IN ${TERMINAL_PAYOUT_STATES_SQL}
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

/** paydb's chains, then proxydb's: the order the migrations seal them and reports list them. */
export const PAYOUT_AUDIT_CHAINS = {
  paydb: [TRANSITION, LEDGER],
  proxydb: [RAIL_INTENT, RAIL_OUTCOME],
} as const satisfies Record<string, readonly ChainSpec[]>;

export const PAYOUT_AUDIT_CHAIN_LIST: readonly ChainSpec[] =
  Object.values(PAYOUT_AUDIT_CHAINS).flat();
