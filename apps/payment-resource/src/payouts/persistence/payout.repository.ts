import assert from 'node:assert/strict';
import { sqlRows } from '@dlock/persistence';
import { Injectable } from '@nestjs/common';
import {
  TERMINAL_PAYOUT_STATES_SQL,
  type PayoutRecord,
  type PayoutState,
} from '@dlock/payout-contract';
import { toBigintOrNull, toMinor, type Db } from '../../persistence/paydb.sql';
import {
  answerInsert,
  type Answer,
  type IdempotencyScope,
  type StoredResponse,
} from './idempotency.repository';
import type { TransitionRecord } from './transition-log.repository';

/** A payout as P4 shows it (@dlock/payout-contract), with its token a bigint and instants Dates. */
export interface Payout extends Omit<PayoutRecord, 'tokenStamp' | `${string}At`> {
  tokenStamp: bigint | null;
  createdAt: Date;
  claimedAt: Date | null;
  submittedAt: Date | null;
  ambiguousAt: Date | null;
  settledAt: Date | null;
  updatedAt: Date;
}

export interface PayoutRow {
  payout_id: string;
  account_id: string;
  amount_minor: string;
  currency: string;
  beneficiary_ref: string;
  client_ref: string;
  state: PayoutState;
  attempt_count: number;
  claimed_by: string | null;
  token_stamp: string | null;
  submission_id: string | null;
  rail_reference: string | null;
  failure_reason: string | null;
  created_at: Date;
  claimed_at: Date | null;
  submitted_at: Date | null;
  ambiguous_at: Date | null;
  settled_at: Date | null;
  updated_at: Date;
}

export function fromRow(r: PayoutRow): Payout {
  return {
    payoutId: r.payout_id,
    accountId: r.account_id,
    amountMinor: toMinor(r.amount_minor),
    currency: r.currency,
    beneficiaryRef: r.beneficiary_ref,
    clientRef: r.client_ref,
    state: r.state,
    attemptCount: r.attempt_count,
    claimedBy: r.claimed_by,
    tokenStamp: toBigintOrNull(r.token_stamp),
    submissionId: r.submission_id,
    railReference: r.rail_reference,
    failureReason: r.failure_reason,
    createdAt: r.created_at,
    claimedAt: r.claimed_at,
    submittedAt: r.submitted_at,
    ambiguousAt: r.ambiguous_at,
    settledAt: r.settled_at,
    updatedAt: r.updated_at,
  };
}

/** What a transition writes besides the state. `now` fields take the database clock. */
export interface PayoutPatch {
  state: PayoutState;
  tokenStamp?: bigint;
  claimedBy?: string;
  incrementAttempts?: boolean;
  submissionId?: string;
  railReference?: string;
  failureReason?: string;
  stampClaimedAt?: boolean;
  stampSubmittedAt?: boolean;
  stampAmbiguousAt?: boolean;
  stampSettledAt?: boolean;
}

export interface ListFilter {
  state: PayoutState;
  accountId?: string;
  limit: number;
  after?: { createdAt: Date; payoutId: string };
}

const NOW = `date_trunc('milliseconds', clock_timestamp())`;

/** Every column of PayoutRow, named: statements are prepared (see @dlock/persistence). */
const COLUMNS = [
  'payout_id',
  'account_id',
  'amount_minor',
  'currency',
  'beneficiary_ref',
  'client_ref',
  'state',
  'attempt_count',
  'claimed_by',
  'token_stamp',
  'submission_id',
  'rail_reference',
  'failure_reason',
  'created_at',
  'claimed_at',
  'submitted_at',
  'ambiguous_at',
  'settled_at',
  'updated_at',
] as const satisfies readonly (keyof PayoutRow)[];
export const PAYOUT_COLUMNS = COLUMNS.join(', ');
const P_COLUMNS = COLUMNS.map((c) => `p.${c}`).join(', ');

/** `UPDATE payout SET … WHERE payout_id = $1` for a patch, without its RETURNING clause. */
function updateStatement(payoutId: string, patch: PayoutPatch): { sql: string; params: unknown[] } {
  const sets = ['state = $2', `updated_at = ${NOW}`];
  const params: unknown[] = [payoutId, patch.state];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (patch.tokenStamp !== undefined) set('token_stamp', patch.tokenStamp.toString());
  if (patch.claimedBy !== undefined) set('claimed_by', patch.claimedBy);
  if (patch.submissionId !== undefined) set('submission_id', patch.submissionId);
  if (patch.railReference !== undefined) set('rail_reference', patch.railReference);
  if (patch.failureReason !== undefined) set('failure_reason', patch.failureReason);
  if (patch.incrementAttempts) sets.push('attempt_count = attempt_count + 1');
  if (patch.stampClaimedAt) sets.push(`claimed_at = ${NOW}`);
  if (patch.stampSubmittedAt) sets.push(`submitted_at = ${NOW}`);
  if (patch.stampAmbiguousAt) sets.push(`ambiguous_at = ${NOW}`);
  if (patch.stampSettledAt) sets.push(`settled_at = ${NOW}`);
  return { sql: `UPDATE payout SET ${sets.join(', ')} WHERE payout_id = $1`, params };
}

/** What a transition's audit row records besides the payout and the state it moved to. */
export type TransitionLogEntry = Omit<TransitionRecord, 'payoutId' | 'to'>;

/**
 * The CTEs of a transition, parameters from $1: `moved`, the payout's update
 * (RETURNING every column); `logged`, its audit row, whose insert takes its
 * row from the update, so one without the other cannot happen (the columns
 * are those of TransitionLogRepository.record); with an answer, `answered`,
 * its idempotency record. With `after`, the name of an earlier CTE, the update
 * runs only when that CTE has a row and the answer lands with the update or
 * fails the statement (answerInsert).
 */
export function transitionCtes(
  payoutId: string,
  patch: PayoutPatch,
  t: TransitionLogEntry,
  answer?: Answer,
  after?: string,
): { ctes: string; params: unknown[] } {
  const { sql, params } = updateStatement(payoutId, patch);
  const n = params.length;
  params.push(
    t.from,
    t.event,
    t.actor,
    t.token?.toString() ?? null,
    t.submissionId ?? null,
    t.railReference ?? null,
    t.reason ?? null,
  );
  // With `after`: the update needs that CTE's row, and the answer needs the update's.
  const guard = after === undefined ? '' : ` AND EXISTS (SELECT 1 FROM ${after})`;
  const answerAfter = after === undefined ? undefined : 'moved';
  const answerCte = answer && answerInsert(answer, params.length + 1, answerAfter);
  if (answerCte) params.push(...answerCte.params);
  // The row's new version, for the fast path's next pin of it (SeenPayout.rowVersion).
  const ctes = `moved AS (${sql}${guard} RETURNING ${PAYOUT_COLUMNS}, xmin::text AS row_version),
            logged AS (
              INSERT INTO payout_transition
                (payout_id, from_state, to_state, event, actor, token, submission_id, rail_reference, reason)
              SELECT payout_id, $${n + 1}, state, $${n + 2}, $${n + 3}, $${n + 4}::bigint, $${n + 5}::uuid,
                     $${n + 6}, $${n + 7}
                FROM moved)
            ${answerCte ? `, answered AS (${answerCte.sql})` : ''}`;
  return { ctes, params };
}

/** What PayoutRepository.stats reads; times are epoch seconds of a bucket's start. */
export interface PayoutStatsRow {
  first_s: number;
  last_s: number;
  by_state: Record<string, number>;
  posted_per_bucket: Record<string, number>;
  /** p50, p90, p99 in ms; null when nothing was posted. */
  latency_ms: number[] | null;
  posted_count: number;
  /** The same over every POSTED payout there is. */
  latency_all_ms: number[] | null;
  posted_all_count: number;
}

/** A fenced write's payout, row-locked, and this request's answer if one was already committed. */
export interface PinnedPayout {
  payout: Payout;
  earlier: StoredResponse | null;
}

export type PinnedRow = PayoutRow & {
  idem_request_hash: string | null;
  idem_status_code: number | null;
  idem_response_body: string | null;
};

/** Select list and join of a pin: the payout `p` and the scope's idempotency record `i`. */
export const PINNED_COLUMNS = `${P_COLUMNS}, i.request_hash AS idem_request_hash,
  i.status_code AS idem_status_code, i.response_body AS idem_response_body`;
export const PINNED_JOIN = (operation: string, key: string, token: string): string =>
  `LEFT JOIN idempotency_record i
     ON i.operation = ${operation} AND i.idempotency_key = ${key} AND i.token = ${token}::bigint`;

export function pinnedFromRow(r: PinnedRow): PinnedPayout {
  const earlier =
    r.idem_request_hash !== null && r.idem_status_code !== null && r.idem_response_body !== null
      ? {
          requestHash: r.idem_request_hash,
          statusCode: r.idem_status_code,
          body: r.idem_response_body,
        }
      : null;
  return { payout: fromRow(r), earlier };
}

@Injectable()
export class PayoutRepository {
  /** The owning account (immutable), read before the transaction to know which fence guards it. */
  async accountOf(db: Db, payoutId: string): Promise<string | null> {
    const rows: { account_id: string }[] = await sqlRows(
      db,
      `SELECT account_id FROM payout WHERE payout_id = $1`,
      [payoutId],
    );
    return rows[0]?.account_id ?? null;
  }

  async find(db: Db, payoutId: string): Promise<Payout | null> {
    const rows: PayoutRow[] = await sqlRows(
      db,
      `SELECT ${PAYOUT_COLUMNS} FROM payout WHERE payout_id = $1`,
      [payoutId],
    );
    return rows.length === 1 ? fromRow(rows[0]) : null;
  }

  /**
   * Pins the payout and, in the same read, finds this request's answer if a
   * duplicate committed it while this one waited for the account's row lock.
   * Run as its own statement (a fresh snapshot) when the fence advance could
   * not pin (FenceRepository.advance).
   */
  async lockForWrite(tx: Db, payoutId: string, scope: IdempotencyScope): Promise<PinnedPayout> {
    const rows: PinnedRow[] = await sqlRows(
      tx,
      `SELECT ${PINNED_COLUMNS} FROM payout p ${PINNED_JOIN('$2', '$3', '$4')}
        WHERE p.payout_id = $1 FOR UPDATE OF p`,
      [payoutId, scope.operation, scope.key, scope.token.toString()],
    );
    assert.equal(rows.length, 1, `payout ${payoutId} vanished inside its transaction`);
    return pinnedFromRow(rows[0]);
  }

  /** Pins the row for an unfenced write (abandon), after the account's row lock. */
  async lock(tx: Db, payoutId: string): Promise<Payout> {
    const rows: PayoutRow[] = await sqlRows(
      tx,
      `SELECT ${PAYOUT_COLUMNS} FROM payout WHERE payout_id = $1 FOR UPDATE`,
      [payoutId],
    );
    assert.equal(rows.length, 1, `payout ${payoutId} vanished inside its transaction`);
    return fromRow(rows[0]);
  }

  /**
   * A transition and its audit row (FR-30) in one statement (transitionCtes),
   * fenced or an operator's. With an answer, the same statement records it
   * too; `answered` says whether it landed.
   */
  async applyAndLog(
    tx: Db,
    payoutId: string,
    patch: PayoutPatch,
    t: TransitionLogEntry,
    answer?: Answer,
  ): Promise<{ payout: Payout; answered: boolean }> {
    const { ctes, params } = transitionCtes(payoutId, patch, t, answer);
    const rows: (PayoutRow & { answered: boolean })[] = await sqlRows(
      tx,
      `WITH ${ctes}
       SELECT ${PAYOUT_COLUMNS}, ${answer ? 'EXISTS (SELECT 1 FROM answered)' : 'false'} AS answered
         FROM moved`,
      params,
    );
    assert.equal(rows.length, 1);
    return { payout: fromRow(rows[0]), answered: rows[0].answered };
  }

  /** Is the ambiguity older than the SLA, by the database's clock? */
  async ambiguousLongerThan(tx: Db, payoutId: string, slaMs: number): Promise<boolean> {
    const rows: { past: boolean }[] = await sqlRows(
      tx,
      `SELECT ambiguous_at IS NOT NULL
              AND clock_timestamp() - ambiguous_at >= make_interval(secs => $2::double precision / 1000)
              AS past
         FROM payout WHERE payout_id = $1`,
      [payoutId, slaMs],
    );
    return rows[0]?.past === true;
  }

  async list(db: Db, filter: ListFilter): Promise<Payout[]> {
    const where = ['state = $1'];
    const params: unknown[] = [filter.state];
    if (filter.accountId !== undefined) {
      params.push(filter.accountId);
      where.push(`account_id = $${params.length}`);
    }
    if (filter.after) {
      params.push(filter.after.createdAt, filter.after.payoutId);
      where.push(`(created_at, payout_id) > ($${params.length - 1}, $${params.length}::uuid)`);
    }
    params.push(filter.limit);
    const rows: PayoutRow[] = await sqlRows(
      db,
      `SELECT ${PAYOUT_COLUMNS} FROM payout WHERE ${where.join(' AND ')}
        ORDER BY created_at, payout_id LIMIT $${params.length}`,
      params,
    );
    return rows.map(fromRow);
  }

  /**
   * The console's overview in one statement, on the database's clock: payouts
   * by state (all of them: the maintained counts plus the deltas not yet folded
   * in, both as of this statement's snapshot, so the answer is exact), and the payouts POSTED since the start of the
   * bucket holding now − `windowSeconds`, counted per bucket, with their
   * created → POSTED latency percentiles, and those of every POSTED payout
   * (all time, from the maintained histogram: the middle of a bucket about 5 %
   * wide, migrations/paydb/1796659200000-latency-histogram.ts). The posted set is read through
   * payout_terminal_by_time (its predicate and key expression repeated here
   * verbatim so the planner can use it). Buckets are aligned to multiples of
   * `bucketSeconds` since the epoch, so they stay put between polls. Each call
   * also folds the deltas into the counts (the `folded` and `counted` CTEs run
   * whether read or not), so the deltas hold only the changes since the last
   * poll (migrations/paydb/1796572800000-history-bounded.ts, docs/scale.md).
   */
  async stats(db: Db, windowSeconds: number, bucketSeconds: number): Promise<PayoutStatsRow> {
    const rows: PayoutStatsRow[] = await sqlRows(
      db,
      `WITH t AS (
         SELECT (floor((extract(epoch FROM clock_timestamp()) - $1) / $2) * $2)::float8 AS first_s,
                (floor(extract(epoch FROM clock_timestamp()) / $2) * $2)::float8 AS last_s
       ),
       folded AS (DELETE FROM payout_state_delta RETURNING state, n),
       counted AS (
         INSERT INTO payout_state_count AS c (state, n)
         SELECT state, sum(n) FROM folded GROUP BY state ORDER BY state
             ON CONFLICT (state) DO UPDATE SET n = c.n + EXCLUDED.n
       ),
       lat_folded AS (DELETE FROM payout_latency_delta RETURNING bucket, n),
       lat_counted AS (
         INSERT INTO payout_latency_count AS c (bucket, n)
         SELECT bucket, sum(n) FROM lat_folded GROUP BY bucket ORDER BY bucket
             ON CONFLICT (bucket) DO UPDATE SET n = c.n + EXCLUDED.n
       ),
       lat AS (
         SELECT bucket, sum(n) OVER (ORDER BY bucket) AS below, sum(n) OVER () AS total
           FROM (SELECT bucket, sum(n) AS n
                   FROM (SELECT bucket, n FROM payout_latency_count
                         UNION ALL SELECT bucket, n FROM payout_latency_delta) d
                  GROUP BY bucket HAVING sum(n) > 0) h
       ),
       posted AS (
         SELECT COALESCE(settled_at, updated_at) AS posted_at, created_at
           FROM payout
          WHERE state IN ${TERMINAL_PAYOUT_STATES_SQL} AND state = 'POSTED'
            AND COALESCE(settled_at, updated_at) >= (SELECT to_timestamp(first_s) FROM t)
       )
       SELECT t.first_s, t.last_s,
         (SELECT COALESCE(json_object_agg(state, n), '{}')
            FROM (SELECT state, sum(n)::int AS n
                    FROM (SELECT state, n FROM payout_state_count
                          UNION ALL SELECT state, n FROM payout_state_delta) d
                   GROUP BY state HAVING sum(n) <> 0) s) AS by_state,
         (SELECT COALESCE(json_object_agg(b, n), '{}')
            FROM (SELECT (floor(extract(epoch FROM posted_at) / $2) * $2)::bigint AS b,
                         count(*)::int AS n
                    FROM posted GROUP BY 1) x) AS posted_per_bucket,
         (SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP
                   (ORDER BY extract(epoch FROM posted_at - created_at) * 1000)
            FROM posted) AS latency_ms,
         (SELECT count(*)::int FROM posted) AS posted_count,
         a.latency_all_ms, a.posted_all_count
       FROM t,
         (SELECT CASE WHEN max(total) > 0 THEN ARRAY(
                   SELECT (SELECT CASE WHEN min(bucket) = 0 THEN 0
                                       ELSE exp((min(bucket) - 0.5) / 20) END::float8
                             FROM lat WHERE below >= q * total)
                     FROM unnest(ARRAY[0.5, 0.9, 0.99]) AS q) END AS latency_all_ms,
                 COALESCE(max(total), 0)::int AS posted_all_count
            FROM lat) a`,
      [windowSeconds, bucketSeconds],
    );
    return rows[0];
  }

  async insert(
    tx: Db,
    p: Pick<
      Payout,
      'payoutId' | 'accountId' | 'amountMinor' | 'currency' | 'beneficiaryRef' | 'clientRef'
    >,
  ): Promise<void> {
    await sqlRows(
      tx,
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [p.payoutId, p.accountId, p.amountMinor, p.currency, p.beneficiaryRef, p.clientRef],
    );
  }
}
