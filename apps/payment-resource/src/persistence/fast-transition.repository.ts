import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { toBigint, type Db } from './db';
import { ADMITS, ADVANCE_SET, type FenceRequest } from './fence.repository';
import type { Answer, IdempotencyScope } from './idempotency.repository';
import {
  fromRow,
  PAYOUT_COLUMNS,
  PINNED_COLUMNS,
  PINNED_JOIN,
  pinnedFromRow,
  transitionCtes,
  type Payout,
  type PayoutPatch,
  type PayoutRow,
  type PinnedPayout,
  type PinnedRow,
  type TransitionLogEntry,
} from './payout.repository';

/** The payout as the fast path read it, without a lock, and the version of its row. */
export interface SeenPayout extends PinnedPayout {
  /** The row's xmin: the transaction that wrote this version; any later committed change makes a new one. */
  rowVersion: string;
}

/**
 * A fenced transition in two round trips and no transaction
 * (docs/payment-resource.md, "The one-statement fast path"): a plain read of
 * the payout, from which the caller checks the transition and builds the
 * answer, then one statement that writes everything only if nothing it read
 * has changed. Zero rows from it: nothing changed, take the transactional path.
 */
@Injectable()
export class FastTransitionRepository {
  /** The payout and this request's earlier answer, if any; null: no such payout. */
  async read(db: Db, payoutId: string, scope: IdempotencyScope): Promise<SeenPayout | null> {
    const rows: (PinnedRow & { row_version: string })[] = await db.query(
      `SELECT ${PINNED_COLUMNS}, p.xmin::text AS row_version
         FROM payout p ${PINNED_JOIN('$2', '$3', '$4')}
        WHERE p.payout_id = $1`,
      [payoutId, scope.operation, scope.key, scope.token.toString()],
    );
    if (rows.length === 0) return null;
    return { ...pinnedFromRow(rows[0]), rowVersion: rows[0].row_version };
  }

  /**
   * The fence advance, the payout's transition, its audit row and the answer,
   * as ONE statement, run in autocommit. Null: it wrote nothing.
   *
   * Why it is all or nothing (READ COMMITTED):
   * - In autocommit one statement is one transaction: it commits whole or not
   *   at all; an error (statement timeout, a taken answer scope) undoes it all.
   * - Each write depends on the check before it: `advanced` moves the fence
   *   only when `pinned` holds the payout, `moved` updates the payout only when
   *   `advanced` moved the fence, `logged` and `answered` take their row from
   *   `moved`. A failed check leaves zero rows and no write, so the fence never
   *   moves without the transition, its audit row and its answer.
   * - The checks hold on the newest rows, not only on the statement's snapshot
   *   (taken before any lock wait): FOR UPDATE locks a row's newest version and
   *   evaluates the CTE's WHERE again on it. `fenced` re-checks the admission
   *   rule on the account, `pinned` the payout's row version, so a writer that
   *   committed meanwhile (a newer claim, a duplicate of this request, an
   *   abandon) leaves zero rows.
   * - Locks are taken as every other payout writer takes them, the account's
   *   first, then the payout's (FenceRepository.advance, PayoutCommands.abandon):
   *   no deadlock with the transactional path. Every payout write holds the
   *   account's lock, so once `fenced` has it the payout cannot change under
   *   this statement.
   * - The earlier-answer check reads the snapshot, which can miss a duplicate
   *   committed during the wait; that duplicate also moved the payout (a new row
   *   version), and one under the same scope for another payout makes the
   *   answer's insert fail the statement (answerInsert with `after`).
   */
  async apply(
    db: Db,
    req: FenceRequest,
    seen: SeenPayout,
    transition: { patch: PayoutPatch; log: TransitionLogEntry },
    answer: Answer,
  ): Promise<{ payout: Payout; fence: bigint } | null> {
    const { patch, log } = transition;
    const { ctes, params } = transitionCtes(req.payoutId, patch, log, answer, 'advanced');
    const n = params.length;
    params.push(
      req.accountId,
      req.token.toString(),
      req.continuation,
      seen.rowVersion,
      answer.scope.operation,
      answer.scope.key,
    );
    const [account, token, continuation, version, operation, key] = [1, 2, 3, 4, 5, 6].map(
      (i) => `$${n + i}`,
    );
    const rows: (PayoutRow & { account_fence: string })[] = await db.query(
      `WITH fenced AS MATERIALIZED (
           SELECT a.account_id FROM account a
            WHERE a.account_id = ${account} AND ${ADMITS('$1', token, continuation)}
              FOR UPDATE),
         pinned AS MATERIALIZED (
           SELECT p.payout_id FROM payout p ${PINNED_JOIN(operation, key, token)}
            WHERE p.payout_id = $1 AND p.account_id IN (SELECT account_id FROM fenced)
              AND p.xmin = ${version}::xid AND i.operation IS NULL
              FOR UPDATE OF p),
         advanced AS (
           UPDATE account a SET ${ADVANCE_SET('$1', token)}
            WHERE a.account_id IN (SELECT account_id FROM fenced) AND EXISTS (SELECT 1 FROM pinned)
            RETURNING a.fence),
         ${ctes}
       SELECT ${PAYOUT_COLUMNS}, (SELECT fence FROM advanced) AS account_fence FROM moved`,
      params,
    );
    if (rows.length === 0) return null;
    assert.equal(rows.length, 1);
    return { payout: fromRow(rows[0]), fence: toBigint(rows[0].account_fence) };
  }
}
