import { sqlRows } from '@dlock/persistence';
import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import type { Db } from '../../persistence/paydb.sql';

export type IntakeOperation = 'create_account' | 'deposit' | 'create_payout';

export interface IntakeKey {
  operation: IntakeOperation;
  idempotencyKey: string;
}

/** What a creating request answered, as its key's row stores it. */
export interface StoredIntake {
  requestHash: string;
  resourceId: string;
  statusCode: number;
  body: string;
}

@Injectable()
export class IntakeRepository {
  /**
   * Takes the key for this transaction: the first statement of a creating
   * transaction. A concurrent request with the same key waits here until
   * this transaction ends, then finds the key taken (false) and replays.
   */
  async take(tx: Db, key: IntakeKey, requestHash: string, resourceId: string): Promise<boolean> {
    const rows: unknown[] = await sqlRows(
      tx,
      `INSERT INTO intake_request (operation, idempotency_key, request_hash, resource_id)
       VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1`,
      [key.operation, key.idempotencyKey, requestHash, resourceId],
    );
    return rows.length === 1;
  }

  /** The answer, written by the transaction that took the key, before it commits. */
  async answer(tx: Db, key: IntakeKey, statusCode: number, body: string): Promise<void> {
    await sqlRows(
      tx,
      `UPDATE intake_request SET status_code = $3, response_body = $4
        WHERE operation = $1 AND idempotency_key = $2`,
      [key.operation, key.idempotencyKey, statusCode, body],
    );
  }

  async find(db: Db, key: IntakeKey): Promise<StoredIntake | null> {
    const rows: {
      request_hash: string;
      resource_id: string;
      status_code: number | null;
      response_body: string | null;
    }[] = await sqlRows(
      db,
      `SELECT request_hash, resource_id, status_code, response_body FROM intake_request
        WHERE operation = $1 AND idempotency_key = $2`,
      [key.operation, key.idempotencyKey],
    );
    const row = rows[0];
    if (!row) return null;
    // Taken and answered in one transaction: a committed row always has its answer.
    assert.ok(row.status_code !== null && row.response_body !== null, 'intake row without answer');
    return {
      requestHash: row.request_hash,
      resourceId: row.resource_id,
      statusCode: row.status_code,
      body: row.response_body,
    };
  }
}
