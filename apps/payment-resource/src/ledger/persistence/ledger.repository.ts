import { sqlRows } from '@dlock/persistence';
import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { rowId } from '@dlock/persistence';
import type { Leg } from '../domain/ledger.rules';
import { toMinor, type Db } from '../../persistence/paydb.sql';

export interface LedgerEntry extends Leg {
  entryId: string;
  txnGroupId: string;
}

/** What a movement's legs record besides their accounts and amounts. */
export interface MovementMeta {
  kind: 'OPENING_BALANCE' | 'PAYOUT' | 'DEPOSIT';
  payoutId?: string;
  fence?: bigint;
  /** The movement's id when the caller names it (a deposit's id); new otherwise. */
  txnGroupId?: string;
}

/**
 * The SET list that moves account `a`'s balance by `d.delta`, the sum of the
 * legs just written to it (the `deltas` CTE of movementCtes).
 */
export const BALANCE_SET = `balance_minor = a.balance_minor + d.delta, version = a.version + 1,
  updated_at = date_trunc('milliseconds', clock_timestamp())`;

/**
 * The CTEs of one movement, parameters from `first`: `entries`, the insert of
 * its legs (ids chosen by newEntries, so an answer can name them before the
 * statement runs), and `deltas`, what they add up to per account. With
 * `after`, the name of an earlier CTE, the legs are written only when that
 * CTE has a row: both of them or neither.
 */
export function movementCtes(
  entries: readonly LedgerEntry[],
  meta: MovementMeta,
  first: number,
  after?: string,
): { ctes: string; params: unknown[] } {
  const params: unknown[] = [];
  const rows = entries.map((e, i) => {
    params.push(
      e.entryId,
      e.txnGroupId,
      e.accountId,
      e.amountMinor,
      e.counterpartyAccountId,
      meta.payoutId ?? null,
      meta.fence?.toString() ?? null,
      meta.kind,
    );
    const at = first + i * 8;
    return `($${at}::uuid, $${at + 1}::uuid, $${at + 2}, $${at + 3}::bigint, $${at + 4}, $${at + 5}::uuid, $${at + 6}::bigint, $${at + 7})`;
  });
  const values = `VALUES ${rows.join(', ')}`;
  const source =
    after === undefined
      ? values
      : `SELECT v.* FROM (${values}) v WHERE EXISTS (SELECT 1 FROM ${after})`;
  const ctes = `entries AS (
           INSERT INTO ledger_entry
             (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, payout_id, fence, kind)
           ${source}
           RETURNING account_id, amount_minor),
         deltas AS (SELECT account_id, sum(amount_minor) AS delta FROM entries GROUP BY account_id)`;
  return { ctes, params };
}

/** A movement's legs as entries: new ids, one group (the one `meta` names, or a new one). */
export function newEntries(legs: readonly Leg[], meta: MovementMeta): LedgerEntry[] {
  const txnGroupId = meta.txnGroupId ?? rowId();
  return legs.map((leg) => ({ ...leg, entryId: rowId(), txnGroupId }));
}

@Injectable()
export class LedgerRepository {
  /**
   * One movement in one statement (INV-03): appends its legs and moves each
   * account's balance by exactly the legs just written. The deferred trigger
   * re-checks at commit that the group sums to zero. Answers the entries and
   * every touched account's balance and currency afterwards.
   */
  async post(
    tx: Db,
    legs: readonly Leg[],
    meta: MovementMeta,
  ): Promise<{
    entries: LedgerEntry[];
    balances: Map<string, { balanceMinor: number; currency: string }>;
  }> {
    const entries = newEntries(legs, meta);
    const { ctes, params } = movementCtes(entries, meta, 1);
    const moved = await sqlRows<{ account_id: string; balance_minor: string; currency: string }>(
      tx,
      `WITH ${ctes}
         UPDATE account a SET ${BALANCE_SET}
           FROM deltas d
          WHERE a.account_id = d.account_id
          RETURNING a.account_id, a.balance_minor, a.currency`,
      params,
    );
    const accounts = new Set(entries.map((e) => e.accountId));
    assert.equal(moved.length, accounts.size, 'an account is missing for a ledger movement');
    const balances = new Map(
      moved.map((r) => [
        r.account_id,
        { balanceMinor: toMinor(r.balance_minor), currency: r.currency },
      ]),
    );
    return { entries, balances };
  }

  /** FR-25: the balance recomputed from the only source of truth. */
  async sumFor(db: Db, accountId: string): Promise<number> {
    const rows: { total: string }[] = await sqlRows(
      db,
      `SELECT COALESCE(sum(amount_minor), 0)::bigint AS total FROM ledger_entry WHERE account_id = $1`,
      [accountId],
    );
    return toMinor(rows[0].total);
  }
}
