import { Injectable } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
import { type Db } from './db';

/** C3 §3.1 + DECISIONS §4: a replay is recognised per operation, key and token. */
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

@Injectable()
export class IdempotencyRepository {
  async find(db: Db, scope: IdempotencyScope): Promise<StoredResponse | null> {
    const rows: {
      request_hash: string;
      status_code: number | null;
      response_body: string | null;
    }[] = await db.query(
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
   * The read before a fenced write, in one round trip: the payout's (immutable)
   * account, and a completed record of this scope if one exists. Null when the
   * payout does not exist.
   */
  async lookup(
    db: Db,
    scope: IdempotencyScope,
    payoutId: string,
  ): Promise<{ accountId: string; earlier: StoredResponse | null } | null> {
    const rows: {
      account_id: string;
      request_hash: string | null;
      status_code: number | null;
      response_body: string | null;
    }[] = await db.query(
      `SELECT p.account_id, i.request_hash, i.status_code, i.response_body
         FROM payout p
         LEFT JOIN idempotency_record i
           ON i.operation = $2 AND i.idempotency_key = $3 AND i.token = $4::bigint
        WHERE p.payout_id = $1`,
      [payoutId, scope.operation, scope.key, scope.token.toString()],
    );
    const row = rows[0];
    if (!row) return null;
    const complete =
      row.request_hash !== null && row.status_code !== null && row.response_body !== null;
    return {
      accountId: row.account_id,
      earlier: complete
        ? { requestHash: row.request_hash!, statusCode: row.status_code!, body: row.response_body! }
        : null,
    };
  }

  /**
   * Claims the scope inside the write's transaction. False means a duplicate
   * already committed it (the insert waited for that transaction to finish).
   */
  async reserve(
    tx: Db,
    scope: IdempotencyScope,
    requestHash: string,
    payoutId: string,
  ): Promise<boolean> {
    const rows: unknown[] = await tx.query(
      `INSERT INTO idempotency_record (operation, idempotency_key, token, request_hash, payout_id)
       VALUES ($1, $2, $3::bigint, $4, $5)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [scope.operation, scope.key, scope.token.toString(), requestHash, payoutId],
    );
    return rows.length === 1;
  }

  async complete(tx: Db, scope: IdempotencyScope, statusCode: number, body: string) {
    await tx.query(
      `UPDATE idempotency_record SET status_code = $4, response_body = $5
        WHERE operation = $1 AND idempotency_key = $2 AND token = $3::bigint`,
      [scope.operation, scope.key, scope.token.toString(), statusCode, body],
    );
  }
}
