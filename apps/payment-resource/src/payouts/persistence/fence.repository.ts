import { sqlRows } from '@dlock/persistence';
import { Injectable } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
import { toBigint, type Db } from '../../persistence/paydb.sql';
import type { IdempotencyScope } from './idempotency.repository';
import {
  PINNED_COLUMNS,
  PINNED_JOIN,
  pinnedFromRow,
  type PinnedPayout,
  type PinnedRow,
} from './payout.repository';

export type FenceAdvance =
  /**
   * The write may proceed; `fence` is the account's fence after the statement.
   * `pinned` is null when another writer committed on the account after this
   * statement's snapshot: pin again with a fresh read (PayoutRepository.lockForWrite).
   */
  | { admitted: true; accountId: string; fence: bigint; pinned: PinnedPayout | null }
  /** Zero rows: no such payout, or a token at least this high was already accepted (INV-05). */
  | { admitted: false };

export interface FenceRequest {
  payoutId: string;
  token: FencingToken;
  /** The account the caller's grant proof is for: the write is admitted only on it. */
  accountId: string;
  /**
   * A grant's later writes to the payout whose critical section it opened
   * (its claim, its P6/P8, then its post) present the same token. An equal
   * token is admitted only for that payout; a claim never continues anything.
   */
  continuation: boolean;
}

/**
 * The admission rule of a fenced write on the account `a` (docs/payment-resource.md,
 * "Strict `<`"): a newer token, or the same token continuing the payout its grant opened.
 * Arguments are the statement's parameters for the payout id, the token and `continuation`.
 */
export const ADMITS = (payoutId: string, token: string, continuation: string): string =>
  `(a.fence < ${token}::bigint
    OR (${continuation}::boolean AND a.fence = ${token}::bigint AND a.fence_payout_id = ${payoutId}::uuid))`;

/**
 * The SET list of an admitted write's fence advance on the account `a`. With
 * `balanceDelta`, the same update also moves the balance by it (a row is
 * updated once per statement), counted as the two updates they would be apart.
 */
export const ADVANCE_SET = (payoutId: string, token: string, balanceDelta?: string): string =>
  `fence = ${token}::bigint, fence_payout_id = ${payoutId}::uuid, ${
    balanceDelta === undefined
      ? 'version = a.version + 1'
      : `balance_minor = a.balance_minor + ${balanceDelta}, version = a.version + 2`
  }, updated_at = date_trunc('milliseconds', clock_timestamp())`;

/**
 * Enforcement point (a): the conditional fence advance (docs/payment-resource.md step 5). It is
 * the first statement of every fenced transaction and one statement only; the
 * row lock it takes serialises every writer of the account (INV-01). The
 * account is the payout's (immutable) owner, found in the same statement.
 */
@Injectable()
export class FenceRepository {
  /**
   * The advance and, in the same statement, the payout's row lock and this
   * request's earlier answer. Every part of a statement reads one snapshot,
   * taken before any wait for the account's row lock. The advance itself is
   * re-checked on the newest row after such a wait, and the payout's lock
   * returns its newest version, but the idempotency read could be stale. The
   * account's `version` shows the wait: the pin counts only if the advance
   * moved it by exactly one from what the snapshot saw.
   */
  async advance(tx: Db, req: FenceRequest, scope: IdempotencyScope): Promise<FenceAdvance> {
    const rows: (PinnedRow & {
      fence_account_id: string;
      fence_value: string;
      pin_fresh: boolean;
    })[] = await sqlRows(
      tx,
      `WITH advanced AS (
           UPDATE account a SET ${ADVANCE_SET('$1', '$2')}
             FROM payout p
            WHERE p.payout_id = $1::uuid AND a.account_id = p.account_id
              AND p.account_id = $6 AND ${ADMITS('$1', '$2', '$3')}
            RETURNING a.account_id, a.fence, a.version)
         SELECT adv.account_id AS fence_account_id, adv.fence AS fence_value,
                adv.version = seen.version + 1 AS pin_fresh, ${PINNED_COLUMNS}
           FROM advanced adv
           JOIN account seen ON seen.account_id = adv.account_id
           JOIN payout p ON p.payout_id = $1::uuid
           ${PINNED_JOIN('$4', '$5', '$2')}
            FOR UPDATE OF p`,
      [
        req.payoutId,
        req.token.toString(),
        req.continuation,
        scope.operation,
        scope.key,
        req.accountId,
      ],
    );
    if (rows.length === 0) return { admitted: false };
    const r = rows[0];
    return {
      admitted: true,
      accountId: r.fence_account_id,
      fence: toBigint(r.fence_value),
      pinned: r.pin_fresh ? pinnedFromRow(r) : null,
    };
  }

  /**
   * Harness negative control only (PAYMENT_FENCING_ENABLED=false): the row is
   * still touched and locked, the fence never goes backwards, but nothing is
   * rejected, so a stale holder's write lands. Null: no such payout, or one of
   * another account than the grant's (the proof is checked whatever the switch).
   */
  async advanceUnguarded(
    tx: Db,
    req: FenceRequest,
  ): Promise<{ accountId: string; fence: bigint } | null> {
    const rows = await sqlRows<{ account_id: string; fence: string }>(
      tx,
      `UPDATE account a
            SET fence = GREATEST(a.fence, $2::bigint),
                fence_payout_id = CASE WHEN a.fence <= $2::bigint THEN $1::uuid ELSE a.fence_payout_id END,
                version = a.version + 1,
                updated_at = date_trunc('milliseconds', clock_timestamp())
           FROM payout p
          WHERE p.payout_id = $1::uuid AND a.account_id = p.account_id AND p.account_id = $3
          RETURNING a.account_id, a.fence`,
      [req.payoutId, req.token.toString(), req.accountId],
    );
    return rows.length === 1
      ? { accountId: rows[0].account_id, fence: toBigint(rows[0].fence) }
      : null;
  }

  /** The fence that beat a rejected token, for the FENCED_OUT body. */
  async current(db: Db, accountId: string): Promise<bigint | null> {
    const rows: { fence: string }[] = await sqlRows(
      db,
      `SELECT fence FROM account WHERE account_id = $1`,
      [accountId],
    );
    return rows.length === 1 ? toBigint(rows[0].fence) : null;
  }
}
