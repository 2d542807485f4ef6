import { sqlRows } from '@dlock/persistence';
import { Injectable } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
import { type Db } from '../../persistence/paydb.sql';

/** docs/contract.md + docs/contract.md: a replay is recognised per operation, key and token. */
export interface IdempotencyScope {
  operation: string;
  key: string;
  token: FencingToken;
}

export interface StoredResponse {
  requestHash: string;
  statusCode: number;
  body: string;
}

/** A request's answer, as its scope's row stores it. */
export interface Answer {
  scope: IdempotencyScope;
  requestHash: string;
  payoutId: string;
  statusCode: number;
  body: string;
}

/**
 * The insert of an answer, its parameters numbered from `first`, so a write's
 * last statement can carry it (RETURNING 1 when it landed, nothing when a
 * duplicate committed the scope first). With `after`, a CTE of the same
 * statement, the answer is inserted once per row of that CTE (none: no
 * answer), and a scope already taken fails the whole statement (unique
 * violation) instead of being skipped: the statement's other writes cannot
 * land without their answer.
 */
export function answerInsert(
  answer: Answer,
  first: number,
  after?: string,
): { sql: string; params: unknown[] } {
  const $ = (i: number) => `$${first + i}`;
  const row = `${$(0)}, ${$(1)}, ${$(2)}::bigint, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}`;
  return {
    sql: `INSERT INTO idempotency_record
            (operation, idempotency_key, token, request_hash, payout_id, status_code, response_body)
          ${after === undefined ? `VALUES (${row}) ON CONFLICT DO NOTHING RETURNING 1` : `SELECT ${row} FROM ${after}`}`,
    params: [
      answer.scope.operation,
      answer.scope.key,
      answer.scope.token.toString(),
      answer.requestHash,
      answer.payoutId,
      answer.statusCode,
      answer.body,
    ],
  };
}

@Injectable()
export class IdempotencyRepository {
  async find(db: Db, scope: IdempotencyScope): Promise<StoredResponse | null> {
    const rows: {
      request_hash: string;
      status_code: number | null;
      response_body: string | null;
    }[] = await sqlRows(
      db,
      `SELECT request_hash, status_code, response_body FROM idempotency_record
          WHERE operation = $1 AND idempotency_key = $2 AND token = $3::bigint`,
      [scope.operation, scope.key, scope.token.toString()],
    );
    const row = rows[0];
    // A row is only ever visible once its transaction committed it complete.
    if (!row || row.status_code === null || row.response_body === null) return null;
    return { requestHash: row.request_hash, statusCode: row.status_code, body: row.response_body };
  }

  /**
   * The scope's answer, written once, complete, as the write's last statement.
   * False: the scope is taken (a duplicate committed it first).
   */
  async record(tx: Db, answer: Answer): Promise<boolean> {
    const insert = answerInsert(answer, 1);
    const rows: unknown[] = await sqlRows(tx, insert.sql, insert.params);
    return rows.length === 1;
  }
}
