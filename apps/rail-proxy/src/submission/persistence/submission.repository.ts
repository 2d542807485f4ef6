import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { parseFencingToken } from '@dlock/lock-api';
import { rowId, sqlRows, sqlState } from '@dlock/persistence';
import { type RailOutcome } from '@dlock/payout-contract';
import type { StoredResponse } from './idempotency.repository';
import type { SubmissionRecord, SubmissionRequest } from '../domain/submission.types';

interface SubmissionRow {
  submission_id: string;
  payout_id: string;
  account_id: string;
  presented_token: string;
  owner_id: string;
  client_ref: string;
  amount_minor: string;
  currency: string;
  beneficiary_ref: string;
  fencing_enforced: boolean;
  outcome: RailOutcome | null;
  rail_reference: string | null;
  error_code: string | null;
  highest_token_seen: string | null;
  created_at: Date;
  resolved_at: Date | null;
}

/**
 * The predicate of the partial unique index `rail_submission_one_live_per_payout`
 * (migrations/proxydb): FENCED and WITHDRAWN rows presented nothing and are not
 * live. `ON CONFLICT` must restate it exactly for PostgreSQL to pick the index.
 */
const LIVE = `outcome IS DISTINCT FROM 'FENCED' AND outcome IS DISTINCT FROM 'WITHDRAWN' AND fencing_enforced`;

const COLUMNS = `submission_id, payout_id, account_id, presented_token, owner_id, client_ref,
  amount_minor, currency, beneficiary_ref, fencing_enforced, outcome, rail_reference, error_code,
  highest_token_seen, created_at, resolved_at`;

function toRecord(row: SubmissionRow): SubmissionRecord {
  return {
    submissionId: row.submission_id,
    payoutId: row.payout_id,
    accountId: row.account_id,
    presentedToken: parseFencingToken(row.presented_token, 'rail_submission.presented_token'),
    ownerId: row.owner_id,
    clientRef: row.client_ref,
    amountMinor: Number(row.amount_minor),
    currency: row.currency,
    beneficiaryRef: row.beneficiary_ref,
    fencingEnforced: row.fencing_enforced,
    outcome: row.outcome,
    railReference: row.rail_reference,
    errorCode: row.error_code,
    highestTokenSeen:
      row.highest_token_seen === null
        ? null
        : parseFencingToken(row.highest_token_seen, 'rail_submission.highest_token_seen'),
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
  };
}

type AdmissionRow = Partial<SubmissionRow> & {
  reserved: boolean;
  marked: boolean;
  mark: string | null;
};

/** Raised by `rail_not_admitted()` (migrations/proxydb, admission-at-once). */
const NOT_ADMITTED_SQLSTATE = 'DLA01';

/**
 * Steps 1-3 of docs/rail.md in one statement, each part running only if the one
 * before it let the request through:
 *   - the idempotency scope (key, token) is reserved; a concurrent twin waits
 *     here for the first to finish, then finds it taken;
 *   - the high-water mark rises to the token only if the token is strictly
 *     greater (or the account is new). The conflicting row stays locked even
 *     when it does not rise, which serialises the account's submissions;
 *   - the intent row, outcome NULL, with the grant proof it was admitted on
 *     (INV-07, verified again by the reconciler), unless the payout already has
 *     a live submission, whatever its token (FR-18: the partial unique index decides).
 * With `fencingEnforced` false (harness negative control, docs/operations.md) the
 * mark only ever rises and nothing is refused by it; `mark` (the value after
 * the statement) above the token then shows a regression let through.
 * `allOrNothing` makes a request that was not admitted raise instead, which
 * undoes the reservation and the mark.
 */
function admissionSql(allOrNothing: boolean): string {
  const refused = allOrNothing
    ? `, CASE WHEN intent.submission_id IS NULL THEN rail_not_admitted() END AS not_admitted`
    : '';
  return `WITH reserved AS (
           INSERT INTO rail_idempotency (idempotency_key, presented_token, request_hash)
           VALUES ($6, $4, $12) ON CONFLICT DO NOTHING RETURNING 1),
         marked AS (
           INSERT INTO rail_high_water AS hw (account_id, highest_token, updated_at)
           SELECT $3, $4::bigint, now() FROM reserved
           ON CONFLICT (account_id) DO UPDATE
             SET highest_token = GREATEST(hw.highest_token, EXCLUDED.highest_token),
                 updated_at = now()
             WHERE hw.highest_token < EXCLUDED.highest_token OR NOT $11::boolean
           RETURNING hw.highest_token),
         intent AS (
           INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token,
             owner_id, idempotency_key, client_ref, amount_minor, currency, beneficiary_ref,
             fencing_enforced, grant_proof)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $13 FROM marked
           ON CONFLICT (payout_id) WHERE ${LIVE}
           DO NOTHING
           RETURNING ${COLUMNS})
         SELECT EXISTS (SELECT 1 FROM reserved) AS reserved, EXISTS (SELECT 1 FROM marked) AS marked,
                (SELECT highest_token FROM marked) AS mark, intent.*${refused}
           FROM (VALUES (1)) AS one LEFT JOIN intent ON true`;
}

const ADMISSION_SQL = admissionSql(false);
const ADMISSION_AT_ONCE_SQL = admissionSql(true);

function markOf(r: AdmissionRow): bigint | null {
  return r.mark === null ? null : parseFencingToken(r.mark, 'rail_high_water.highest_token');
}

/**
 * proxydb I/O for the high-water mark and the submission record. Every guard
 * is one SQL statement here; the rules that combine them live in the service.
 */
@Injectable()
export class SubmissionRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Steps 1-3 of docs/rail.md in one statement (`admissionSql`), in the caller's
   * transaction: what each part decided comes back, admitted or not.
   */
  async admit(
    m: EntityManager,
    req: SubmissionRequest,
    requestHash: string,
    fencingEnforced: boolean,
  ): Promise<{
    reserved: boolean;
    marked: boolean;
    mark: bigint | null;
    intent: SubmissionRecord | null;
  }> {
    const rows: AdmissionRow[] = await sqlRows(m, ADMISSION_SQL, [
      ...requestColumns(req),
      fencingEnforced,
      requestHash,
      verifiedProof(req),
    ]);
    const r = rows[0];
    return {
      reserved: r.reserved,
      marked: r.marked,
      mark: markOf(r),
      intent:
        r.submission_id === null || r.submission_id === undefined
          ? null
          : toRecord(r as SubmissionRow),
    };
  }

  /**
   * The same statement alone in autocommit, all or nothing (docs/rail.md,
   * "Admission in one round trip"): the intent is committed, or, when the
   * request is not admitted (a twin, a stale token, a live submission), the
   * statement raises and writes nothing, and the answer is null. The caller
   * then answers through `admit` in a transaction, which tells those apart.
   */
  async admitAtOnce(
    req: SubmissionRequest,
    requestHash: string,
    fencingEnforced: boolean,
  ): Promise<{ mark: bigint | null; intent: SubmissionRecord } | null> {
    try {
      const rows: AdmissionRow[] = await sqlRows(this.db, ADMISSION_AT_ONCE_SQL, [
        ...requestColumns(req),
        fencingEnforced,
        requestHash,
        verifiedProof(req),
      ]);
      return { mark: markOf(rows[0]), intent: toRecord(rows[0] as SubmissionRow) };
    } catch (err) {
      if (sqlState(err) === NOT_ADMITTED_SQLSTATE) return null;
      throw err;
    }
  }

  /** The account's mark, read inside the transaction that holds its row lock. */
  async highWater(m: EntityManager, accountId: string): Promise<bigint> {
    const rows: { highest_token: string }[] = await sqlRows(
      m,
      `SELECT highest_token FROM rail_high_water WHERE account_id = $1`,
      [accountId],
    );
    assert.equal(rows.length, 1, `account ${accountId} has no mark`);
    return parseFencingToken(rows[0].highest_token, 'rail_high_water.highest_token');
  }

  /** The live submission of the payout (not FENCED, not WITHDRAWN), if any. */
  async findLive(m: EntityManager, payoutId: string): Promise<SubmissionRecord | null> {
    const rows: SubmissionRow[] = await sqlRows(
      m,
      `SELECT ${COLUMNS} FROM rail_submission
       WHERE payout_id = $1 AND ${LIVE}
       ORDER BY created_at LIMIT 1`,
      [payoutId],
    );
    return rows.length === 0 ? null : toRecord(rows[0]);
  }

  /**
   * A stale attempt, recorded resolved as FENCED; never presented to the rail.
   * One row per payout and token, however often it is retried: a row already
   * there is answered instead. Race-free because the admission statement of the
   * same transaction holds the account's high-water row (docs/rail.md).
   */
  async insertFenced(
    m: EntityManager,
    req: SubmissionRequest,
    highest: bigint,
  ): Promise<SubmissionRecord> {
    const rows: SubmissionRow[] = await sqlRows(
      m,
      `WITH inserted AS (
         INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token,
           owner_id, idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, outcome,
           error_code, highest_token_seen, resolved_at, grant_proof)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'FENCED', 'STALE_TOKEN', $11, now(), $12
          WHERE NOT EXISTS (SELECT 1 FROM rail_submission
                             WHERE payout_id = $2 AND presented_token = $4 AND outcome = 'FENCED')
         RETURNING ${COLUMNS})
       SELECT ${COLUMNS} FROM inserted
       UNION ALL
       (SELECT ${COLUMNS} FROM rail_submission
         WHERE payout_id = $2 AND presented_token = $4 AND outcome = 'FENCED'
         ORDER BY created_at LIMIT 1)`,
      [...requestColumns(req), highest.toString(), verifiedProof(req)],
    );
    assert.equal(rows.length, 1, 'a fenced attempt has exactly one row');
    return toRecord(rows[0]);
  }

  /**
   * Records the outcome exactly once (only an unresolved row can be resolved)
   * and, in the same statement, the answer of the request's idempotency scope:
   * both or neither.
   */
  async resolve(
    submissionId: string,
    outcome: Exclude<RailOutcome, 'FENCED' | 'WITHDRAWN'>,
    railReference: string | null,
    errorCode: string | null,
    scope: { key: string; token: bigint; response: StoredResponse },
  ): Promise<SubmissionRecord | null> {
    const rows: SubmissionRow[] = await sqlRows(
      this.db,
      `WITH resolved AS (
         UPDATE rail_submission
            SET outcome = $2, rail_reference = $3, error_code = $4, resolved_at = now()
          WHERE submission_id = $1 AND outcome IS NULL
          RETURNING ${COLUMNS}),
       answered AS (
         UPDATE rail_idempotency
            SET response = $7::jsonb, submission_id = $1, completed_at = now()
          WHERE idempotency_key = $5 AND presented_token = $6 AND response IS NULL
            AND EXISTS (SELECT 1 FROM resolved))
       SELECT ${COLUMNS} FROM resolved`,
      [
        submissionId,
        outcome,
        railReference,
        errorCode,
        scope.key,
        scope.token.toString(),
        JSON.stringify(scope.response),
      ],
    );
    return rows.length === 0 ? null : toRecord(rows[0]);
  }

  async find(submissionId: string): Promise<SubmissionRecord | null> {
    const rows: SubmissionRow[] = await sqlRows(
      this.db,
      `SELECT ${COLUMNS} FROM rail_submission WHERE submission_id = $1`,
      [submissionId],
    );
    return rows.length === 0 ? null : toRecord(rows[0]);
  }

  /**
   * Resolves an intent that provably never reached the rail (not a byte was
   * written to it) as WITHDRAWN, `error_code` saying why. The row is kept, as
   * every attempt is; it no longer counts as the payout's live submission.
   */
  async withdraw(m: EntityManager, submissionId: string, reason: string): Promise<boolean> {
    const rows: unknown[] = await sqlRows(
      m,
      `UPDATE rail_submission SET outcome = 'WITHDRAWN', error_code = $2, resolved_at = now()
        WHERE submission_id = $1 AND outcome IS NULL RETURNING 1`,
      [submissionId, reason],
    );
    return rows.length === 1;
  }

  /** R2: every record of the payout, oldest first. */
  async listByPayout(payoutId: string): Promise<SubmissionRecord[]> {
    const rows: SubmissionRow[] = await sqlRows(
      this.db,
      `SELECT ${COLUMNS} FROM rail_submission WHERE payout_id = $1 ORDER BY created_at, submission_id`,
      [payoutId],
    );
    return rows.map(toRecord);
  }
}

/**
 * The grant proof kept with the attempt (docs/rail.md, "proxydb schema"): the one
 * `SubmissionProofs.check` verified, so always a single string by the time anything is written.
 */
function verifiedProof(req: SubmissionRequest): string {
  assert.ok(typeof req.grantProof === 'string', 'only a verified grant proof is kept');
  return req.grantProof;
}

/** $1..$10 of both inserts: a fresh submission id and the request as presented. */
function requestColumns(req: SubmissionRequest): unknown[] {
  return [
    rowId(),
    req.payoutId,
    req.accountId,
    req.presentedToken.toString(),
    req.ownerId,
    req.idempotencyKey,
    req.clientRef,
    req.amountMinor,
    req.currency,
    req.beneficiaryRef,
  ];
}
