import { sqlRows } from '@dlock/persistence';
import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { AVAILABLE } from '../../ledger/persistence/account.repository';
import { toBigint, toMinor, type Db } from '../../persistence/paydb.sql';
import { ADMITS, ADVANCE_SET, type FenceRequest } from './fence.repository';
import type { Answer, IdempotencyScope } from './idempotency.repository';
import {
  BALANCE_SET,
  movementCtes,
  type LedgerEntry,
  type MovementMeta,
} from '../../ledger/persistence/ledger.repository';
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
  /** Its account as read with it: its row's xmin, balance and currency. */
  account: { version: string; balanceMinor: number; currency: string };
}

/** A transition for the one statement, and what it also checks or books besides (P2, P3). */
export interface FastTransition {
  patch: PayoutPatch;
  log: TransitionLogEntry;
  /** P2 from PENDING: written only if the account can fund the payout (AVAILABLE). */
  funded?: boolean;
  /** P3: the ledger pair the transition books, with both balances it moves. */
  movement?: { entries: readonly LedgerEntry[]; meta: MovementMeta };
}

/** What the statement wrote: the payout's row, the account's fence and balance after it. */
export interface FastWritten {
  payout: Payout;
  fence: bigint;
  balanceMinor: number;
  /** Both rows as the statement left them, to pin on the payout's next fast write (SeenPayouts). */
  seen: SeenPayout;
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
  /** The payout, its account and this request's earlier answer, if any; null: no such payout. */
  async read(db: Db, payoutId: string, scope: IdempotencyScope): Promise<SeenPayout | null> {
    const rows: (PinnedRow & {
      row_version: string;
      account_version: string;
      account_balance: string;
      account_currency: string;
    })[] = await sqlRows(
      db,
      `SELECT ${PINNED_COLUMNS}, p.xmin::text AS row_version, a.xmin::text AS account_version,
              a.balance_minor AS account_balance, a.currency AS account_currency
         FROM payout p JOIN account a ON a.account_id = p.account_id
              ${PINNED_JOIN('$2', '$3', '$4')}
        WHERE p.payout_id = $1`,
      [payoutId, scope.operation, scope.key, scope.token.toString()],
    );
    if (rows.length === 0) return null;
    const r = rows[0];
    return {
      ...pinnedFromRow(r),
      rowVersion: r.row_version,
      account: {
        version: r.account_version,
        balanceMinor: toMinor(r.account_balance),
        currency: r.account_currency,
      },
    };
  }

  /**
   * The fence advance, the payout's transition, its audit row and the answer,
   * as ONE statement, run in autocommit; for P2 from PENDING also the funds
   * check, for P3 also the ledger pair and both balances. Null: it wrote nothing.
   *
   * Why it is all or nothing (READ COMMITTED):
   * - In autocommit one statement is one transaction: it commits whole or not
   *   at all; an error (statement timeout, a taken answer scope, a ledger
   *   group that does not sum to zero) undoes it all.
   * - Each write depends on the check or write before it. P6, P2: `advanced`
   *   moves the fence only when `pinned` holds the payout (and, P2, `funded`
   *   found the funds), `moved` updates the payout only when `advanced` moved
   *   the fence, `logged` and `answered` take their row from `moved`. P3:
   *   `moved` needs `pinned`; `logged`, `answered` and the legs (`entries`)
   *   take their rows from `moved`; `advanced` (the fence and the customer
   *   balance, one row updated once) and `cleared` (the clearing balance) move
   *   by `deltas`, the legs just written. A failed check leaves zero rows and
   *   no write, so no part lands without the others.
   * - The checks hold on the newest rows, not only on the statement's snapshot
   *   (taken before any lock wait): FOR UPDATE locks a row's newest version and
   *   evaluates the CTE's WHERE again on it. `fenced` re-checks the admission
   *   rule on the account (P2, P3: and its row version as read), `pinned` the
   *   payout's row version, so a writer that committed meanwhile (a newer
   *   claim, a duplicate of this request, an abandon, a deposit) leaves zero rows.
   * - P2's funds: the balance is the locked row's; the other payouts are the
   *   snapshot's, current because every write that commits funds (a claim)
   *   or lowers the balance (a post) updates the account, which the pinned
   *   account version rules out since the read; an abandon only frees funds.
   * - P3's answer names the balance after the post: with the account pinned
   *   it is the balance read less the amount, checked against the row after.
   * - Locks are taken as every other payout writer takes them, the account's
   *   first, then the payout's (FenceRepository.advance, TransactionalPath.recordUnfenced),
   *   and P3's clearing row last (the ledger seal, then `cleared`, as
   *   LedgerRepository.post): no deadlock with the transactional path. Every
   *   payout write holds the account's lock, so once `fenced` has it the payout
   *   cannot change under this statement.
   * - The earlier-answer check reads the snapshot, which can miss a duplicate
   *   committed during the wait; that duplicate also moved the payout (a new row
   *   version), and one under the same scope for another payout makes the
   *   answer's insert fail the statement (answerInsert with `after`).
   */
  async apply(
    db: Db,
    req: FenceRequest,
    seen: SeenPayout,
    transition: FastTransition,
    answer: Answer,
  ): Promise<FastWritten | null> {
    const { sql, params } = fastStatement(req, seen, transition, answer);
    const rows: WrittenRow[] = await sqlRows(db, sql, params);
    if (rows.length === 0) return null;
    assert.equal(rows.length, 1);
    const r = rows[0];
    const payout = fromRow(r);
    const balanceMinor = toMinor(r.account_balance);
    return {
      payout,
      fence: toBigint(r.account_fence),
      balanceMinor,
      seen: {
        payout,
        earlier: null,
        rowVersion: r.row_version,
        account: { version: r.account_version, balanceMinor, currency: seen.account.currency },
      },
    };
  }
}

type WrittenRow = PayoutRow & {
  row_version: string;
  account_fence: string;
  account_balance: string;
  account_version: string;
};

/** The statement FastTransitionRepository.apply runs; its parameters from $1, the payout id. */
function fastStatement(
  req: FenceRequest,
  seen: SeenPayout,
  t: FastTransition,
  answer: Answer,
): { sql: string; params: unknown[] } {
  const gate = t.funded === true ? 'funded' : 'pinned';
  // P6, P2: the transition follows the fence advance; P3: the advance follows the legs.
  const after = t.movement === undefined ? 'advanced' : gate;
  const { ctes, params } = transitionCtes(req.payoutId, t.patch, t.log, answer, after);
  const $ = (value: unknown): string => `$${params.push(value)}`;
  const [account, token, continuation, version, operation, key] = [
    req.accountId,
    req.token.toString(),
    req.continuation,
    seen.rowVersion,
    answer.scope.operation,
    answer.scope.key,
  ].map($);
  const pinAccount =
    t.funded === true || t.movement !== undefined
      ? ` AND a.xmin = ${$(seen.account.version)}::xid`
      : '';
  // P2 from PENDING: the locked account's balance less what its other payouts hold.
  const funds =
    t.funded === true
      ? `,
         funded AS MATERIALIZED (
           SELECT 1 FROM fenced acc, pinned pin
            WHERE ${AVAILABLE('acc', 'pin.payout_id')} >= pin.amount_minor)`
      : '';
  const checks = `fenced AS MATERIALIZED (
           SELECT a.account_id, a.balance_minor FROM account a
            WHERE a.account_id = ${account} AND ${ADMITS('$1', token, continuation)}${pinAccount}
              FOR UPDATE),
         pinned AS MATERIALIZED (
           SELECT p.payout_id, p.amount_minor FROM payout p ${PINNED_JOIN(operation, key, token)}
            WHERE p.payout_id = $1 AND p.account_id IN (SELECT account_id FROM fenced)
              AND p.xmin = ${version}::xid AND i.operation IS NULL
              FOR UPDATE OF p)${funds}`;
  const fenceOf = `a.account_id IN (SELECT account_id FROM fenced)`;
  let writes: string;
  if (t.movement === undefined) {
    writes = `advanced AS (
           UPDATE account a SET ${ADVANCE_SET('$1', token)}
            WHERE ${fenceOf} AND EXISTS (SELECT 1 FROM ${gate})
            RETURNING a.fence, a.balance_minor, a.xmin::text AS version),
         ${ctes}`;
  } else {
    const movement = movementCtes(t.movement.entries, t.movement.meta, params.length + 1, 'moved');
    params.push(...movement.params);
    writes = `${ctes},
         ${movement.ctes},
         advanced AS (
           UPDATE account a SET ${ADVANCE_SET('$1', token, 'd.delta')}
             FROM deltas d WHERE a.account_id = d.account_id AND ${fenceOf}
            RETURNING a.fence, a.balance_minor, a.xmin::text AS version),
         cleared AS (
           UPDATE account a SET ${BALANCE_SET}
             FROM deltas d WHERE a.account_id = d.account_id AND NOT ${fenceOf})`;
  }
  const sql = `WITH ${checks},
         ${writes}
       SELECT ${PAYOUT_COLUMNS}, row_version, (SELECT fence FROM advanced) AS account_fence,
              (SELECT balance_minor FROM advanced) AS account_balance,
              (SELECT version FROM advanced) AS account_version
         FROM moved`;
  return { sql, params };
}
