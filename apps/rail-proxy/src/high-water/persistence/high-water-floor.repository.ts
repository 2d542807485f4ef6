import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { parseFencingToken } from '@dlock/lock-api';
import { sqlRows } from '@dlock/persistence';

export interface MarkRaise {
  /** Null: the proxy had no mark for the account yet. */
  highestBefore: bigint | null;
  highestAfter: bigint;
  raised: boolean;
}

/**
 * The operator/reconciler raise of an account's high-water mark (fence point
 * (c)), ONE statement: an upsert that only ever moves `highest_token` up.
 * The admission statement accepts a token only above the mark, so after this
 * no token at or below the floor reaches the rail.
 */
@Injectable()
export class HighWaterFloorRepository {
  constructor(private readonly db: DataSource) {}

  async raise(accountId: string, floor: bigint): Promise<MarkRaise> {
    const rows: { before: string | null; raised_to: string | null }[] = await sqlRows(
      this.db,
      `WITH prior AS (
           SELECT highest_token FROM rail_high_water WHERE account_id = $1 FOR UPDATE),
         marked AS (
           INSERT INTO rail_high_water AS hw (account_id, highest_token, updated_at)
           VALUES ($1, $2::bigint, now())
           ON CONFLICT (account_id) DO UPDATE
             SET highest_token = EXCLUDED.highest_token, updated_at = now()
             WHERE hw.highest_token < EXCLUDED.highest_token
           RETURNING hw.highest_token)
         SELECT (SELECT highest_token::text FROM prior) AS before,
                (SELECT highest_token::text FROM marked) AS raised_to`,
      [accountId, floor.toString()],
    );
    const r = rows[0];
    const before = r.before === null ? null : parseFencingToken(r.before, 'highest_token');
    const raisedTo = r.raised_to === null ? null : parseFencingToken(r.raised_to, 'highest_token');
    // Neither: a row inserted concurrently after this statement's snapshot won
    // the conflict, so it already stood at or above the floor.
    return {
      highestBefore: before,
      highestAfter: raisedTo ?? before ?? floor,
      raised: raisedTo !== null,
    };
  }
}
