import { sqlRows } from '@dlock/persistence';
import { Injectable } from '@nestjs/common';
import { toBigint, type Db } from '../../persistence/paydb.sql';

export interface FloorRaise {
  fenceBefore: bigint;
  fenceAfter: bigint;
  raised: boolean;
}

/**
 * The operator/reconciler fence raise (docs/operations.md, "Revocation
 * fencing"): ONE conditional statement. After it, no token at or below the
 * floor is admitted on the account: the fence is at least the floor, and the
 * equal-token continuation of FenceRepository.advance is cut (fence_payout_id
 * cleared), so a revoked holder cannot continue its own payout either.
 */
@Injectable()
export class FenceFloorRepository {
  /** Null: no such account. Never lowers a fence (the raise is skipped when already past). */
  async raise(db: Db, accountId: string, floor: bigint): Promise<FloorRaise | null> {
    const rows: { fence_before: string; fence_after: string; raised: boolean }[] = await sqlRows(
      db,
      `WITH prior AS (
           SELECT account_id, fence FROM account WHERE account_id = $1 FOR UPDATE),
         raised AS (
           UPDATE account a
              SET fence = $2::bigint, fence_payout_id = NULL, version = a.version + 1,
                  updated_at = date_trunc('milliseconds', clock_timestamp())
             FROM prior p
            WHERE a.account_id = p.account_id
              AND (a.fence < $2::bigint OR (a.fence = $2::bigint AND a.fence_payout_id IS NOT NULL))
            RETURNING a.fence)
         SELECT p.fence::text AS fence_before, COALESCE(r.fence, p.fence)::text AS fence_after,
                r.fence IS NOT NULL AS raised
           FROM prior p LEFT JOIN raised r ON true`,
      [accountId, floor.toString()],
    );
    if (rows.length === 0) return null;
    return {
      fenceBefore: toBigint(rows[0].fence_before),
      fenceAfter: toBigint(rows[0].fence_after),
      raised: rows[0].raised,
    };
  }
}
