import { Injectable } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
import { toBigint, updatedRows, type Db } from './db';

export type FenceAdvance =
  /** The write may proceed; `fence` is the account's fence after the statement. */
  | { admitted: true; fence: bigint }
  /** Zero rows: a token at least this high was already accepted (INV-05). */
  | { admitted: false };

export interface FenceRequest {
  accountId: string;
  payoutId: string;
  token: FencingToken;
  /**
   * A grant's later writes to the payout whose critical section it opened
   * (its claim, its P6/P8, then its post) present the same token. An equal
   * token is admitted only for that payout; a claim never continues anything.
   */
  continuation: boolean;
}

/**
 * Enforcement point (a): the conditional fence advance (02 §2.6 step 5). It is
 * the first statement of every fenced transaction and one statement only; the
 * row lock it takes serialises every writer of the account (INV-01).
 */
@Injectable()
export class FenceRepository {
  async advance(tx: Db, req: FenceRequest): Promise<FenceAdvance> {
    const rows = updatedRows<{ fence: string }>(
      await tx.query(
        `UPDATE account
            SET fence = $2::bigint, fence_payout_id = $3::uuid, version = version + 1,
                updated_at = date_trunc('milliseconds', clock_timestamp())
          WHERE account_id = $1
            AND (fence < $2::bigint
                 OR ($4::boolean AND fence = $2::bigint AND fence_payout_id = $3::uuid))
          RETURNING fence`,
        [req.accountId, req.token.toString(), req.payoutId, req.continuation],
      ),
    );
    return rows.length === 1
      ? { admitted: true, fence: toBigint(rows[0].fence) }
      : { admitted: false };
  }

  /**
   * Harness negative control only (PAYMENT_FENCING_ENABLED=false): the row is
   * still touched and locked, the fence never goes backwards, but nothing is
   * rejected, so a stale holder's write lands.
   */
  async advanceUnguarded(tx: Db, req: FenceRequest): Promise<{ fence: bigint }> {
    const rows = updatedRows<{ fence: string }>(
      await tx.query(
        `UPDATE account
            SET fence = GREATEST(fence, $2::bigint),
                fence_payout_id = CASE WHEN fence <= $2::bigint THEN $3::uuid ELSE fence_payout_id END,
                version = version + 1,
                updated_at = date_trunc('milliseconds', clock_timestamp())
          WHERE account_id = $1
          RETURNING fence`,
        [req.accountId, req.token.toString(), req.payoutId],
      ),
    );
    return { fence: toBigint(rows[0].fence) };
  }

  /** The fence that beat a rejected token, for the FENCED_OUT body. */
  async current(db: Db, accountId: string): Promise<bigint | null> {
    const rows: { fence: string }[] = await db.query(
      `SELECT fence FROM account WHERE account_id = $1`,
      [accountId],
    );
    return rows.length === 1 ? toBigint(rows[0].fence) : null;
  }
}
