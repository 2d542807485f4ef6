import { Injectable } from '@nestjs/common';
import { sqlRows } from './sql';
import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import { parseFencingToken, type RailOutcome } from '@dlock/lock-api';
import type { StoredResponse } from './idempotency.repository';
import type { SubmissionRecord, SubmissionRequest } from './submission.types';

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

/**
 * proxydb I/O for the high-water mark and the submission record. Every guard
 * is one SQL statement here; the rules that combine them live in the service.
 */
@Injectable()
export class SubmissionRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Step 1 of C3 §3.5, one conditional upsert: the mark rises to the presented
   * token only if the token is strictly greater (or the account is new). Zero
   * rows back means a newer holder exists. The conflicting row stays locked
   * until the transaction ends, which serialises submissions per account.
   */
  async advanceHighWater(
    m: EntityManager,
    accountId: string,
    token: bigint,
  ): Promise<{ admitted: true } | { admitted: false; highest: bigint }> {
    const rows: { highest_token: string }[] = await sqlRows(
      m,
      `INSERT INTO rail_high_water AS hw (account_id, highest_token, updated_at)
       VALUES ($1, $2, now())
       ON CONFLICT (account_id) DO UPDATE
         SET highest_token = EXCLUDED.highest_token, updated_at = now()
         WHERE hw.highest_token < EXCLUDED.highest_token
       RETURNING hw.highest_token`,
      [accountId, token.toString()],
    );
    if (rows.length === 1) return { admitted: true };
    const [current]: { highest_token: string }[] = await sqlRows(
      m,
      `SELECT highest_token FROM rail_high_water WHERE account_id = $1`,
      [accountId],
    );
    return {
      admitted: false,
      highest: parseFencingToken(current.highest_token, 'rail_high_water.highest_token'),
    };
  }

  /** Kill switch off (harness only): record the mark monotonically, reject nothing. */
  async raiseHighWaterUnchecked(m: EntityManager, accountId: string, token: bigint): Promise<void> {
    await sqlRows(
      m,
      `INSERT INTO rail_high_water AS hw (account_id, highest_token, updated_at)
       VALUES ($1, $2, now())
       ON CONFLICT (account_id) DO UPDATE
         SET highest_token = GREATEST(hw.highest_token, EXCLUDED.highest_token), updated_at = now()`,
      [accountId, token.toString()],
    );
  }

  async highWater(accountId: string): Promise<bigint | null> {
    const rows: { highest_token: string }[] = await sqlRows(
      this.db,
      `SELECT highest_token FROM rail_high_water WHERE account_id = $1`,
      [accountId],
    );
    return rows.length === 0
      ? null
      : parseFencingToken(rows[0].highest_token, 'rail_high_water.highest_token');
  }

  /** The live (non-FENCED) submission of the payout, if any. */
  async findLive(m: EntityManager, payoutId: string): Promise<SubmissionRecord | null> {
    const rows: SubmissionRow[] = await sqlRows(
      m,
      `SELECT ${COLUMNS} FROM rail_submission
       WHERE payout_id = $1 AND outcome IS DISTINCT FROM 'FENCED' AND fencing_enforced
       ORDER BY created_at LIMIT 1`,
      [payoutId],
    );
    return rows.length === 0 ? null : toRecord(rows[0]);
  }

  /**
   * Steps 2 and 3 in one statement: the intent row, outcome NULL, unless the
   * payout already has a live submission (the FR-18 index decides; null then).
   * A duplicate racing in another transaction waits for it here, then gets null.
   */
  async insertIntent(
    m: EntityManager,
    req: SubmissionRequest,
    fencingEnforced: boolean,
  ): Promise<SubmissionRecord | null> {
    const rows: SubmissionRow[] = await sqlRows(
      m,
      `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
         idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, fencing_enforced)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (payout_id) WHERE outcome IS DISTINCT FROM 'FENCED' AND fencing_enforced
       DO NOTHING
       RETURNING ${COLUMNS}`,
      [...requestColumns(req), fencingEnforced],
    );
    return rows.length === 0 ? null : toRecord(rows[0]);
  }

  /** A stale attempt, recorded resolved as FENCED; never presented to the rail. */
  async insertFenced(
    m: EntityManager,
    req: SubmissionRequest,
    highest: bigint,
  ): Promise<SubmissionRecord> {
    const rows: SubmissionRow[] = await sqlRows(
      m,
      `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
         idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, outcome, error_code,
         highest_token_seen, resolved_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'FENCED', 'STALE_TOKEN', $11, now())
       RETURNING ${COLUMNS}`,
      [...requestColumns(req), highest.toString()],
    );
    return toRecord(rows[0]);
  }

  /**
   * Records the outcome exactly once (only an unresolved row can be resolved)
   * and, in the same statement, the answer of the request's idempotency scope:
   * both or neither.
   */
  async resolve(
    submissionId: string,
    outcome: Exclude<RailOutcome, 'FENCED'>,
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

  /** Removes an intent that provably never reached the rail (nothing was written to it). */
  async withdraw(m: EntityManager, submissionId: string): Promise<boolean> {
    const rows: unknown[] = await sqlRows(
      m,
      `DELETE FROM rail_submission WHERE submission_id = $1 AND outcome IS NULL RETURNING 1`,
      [submissionId],
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

/** $1..$10 of both inserts: a fresh submission id and the request as presented. */
function requestColumns(req: SubmissionRequest): unknown[] {
  return [
    randomUUID(),
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
