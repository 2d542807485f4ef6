import { Injectable } from '@nestjs/common';
import { sqlRows } from '@dlock/persistence';
import { DataSource, type EntityManager } from 'typeorm';
import type { StoredResponse } from '../domain/submission.types';

export type { StoredResponse };

export interface IdempotencyRecord {
  requestHash: string;
  submissionId: string | null;
  /** null while the original request is still in flight (or its process died). */
  response: StoredResponse | null;
}

@Injectable()
export class IdempotencyRepository {
  constructor(private readonly db: DataSource) {}

  async find(key: string, token: bigint): Promise<IdempotencyRecord | null> {
    const rows: { request_hash: string; submission_id: string | null; response: unknown }[] =
      await sqlRows(
        this.db,
        `SELECT request_hash, submission_id, response FROM rail_idempotency
         WHERE idempotency_key = $1 AND presented_token = $2`,
        [key, token.toString()],
      );
    if (rows.length === 0) return null;
    return {
      requestHash: rows[0].request_hash,
      submissionId: rows[0].submission_id,
      response: (rows[0].response as StoredResponse | null) ?? null,
    };
  }

  async complete(
    m: EntityManager,
    key: string,
    token: bigint,
    submissionId: string | null,
    response: StoredResponse,
  ): Promise<void> {
    await sqlRows(
      m,
      `UPDATE rail_idempotency
         SET response = $3::jsonb, submission_id = $4, completed_at = now()
       WHERE idempotency_key = $1 AND presented_token = $2 AND response IS NULL`,
      [key, token.toString(), JSON.stringify(response), submissionId],
    );
  }

  async release(m: EntityManager, key: string, token: bigint): Promise<void> {
    await sqlRows(
      m,
      `DELETE FROM rail_idempotency
       WHERE idempotency_key = $1 AND presented_token = $2 AND response IS NULL`,
      [key, token.toString()],
    );
  }
}
