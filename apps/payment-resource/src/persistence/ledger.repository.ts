import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Leg } from '../domain/ledger';
import { toMinor, updatedRows, type Db } from './db';

export interface LedgerEntry extends Leg {
  entryId: string;
  txnGroupId: string;
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
    meta: {
      kind: 'OPENING_BALANCE' | 'PAYOUT' | 'DEPOSIT';
      payoutId?: string;
      fence?: bigint;
      /** The movement's id when the caller names it (a deposit's id); new otherwise. */
      txnGroupId?: string;
    },
  ): Promise<{
    entries: LedgerEntry[];
    balances: Map<string, { balanceMinor: number; currency: string }>;
  }> {
    const txnGroupId = meta.txnGroupId ?? randomUUID();
    const entries = legs.map((leg) => ({ ...leg, entryId: randomUUID(), txnGroupId }));
    const values: unknown[] = [];
    const rows = entries.map((e, i) => {
      values.push(
        e.entryId,
        txnGroupId,
        e.accountId,
        e.amountMinor,
        e.counterpartyAccountId,
        meta.payoutId ?? null,
        meta.fence?.toString() ?? null,
        meta.kind,
      );
      const at = i * 8;
      return `($${at + 1}::uuid, $${at + 2}::uuid, $${at + 3}, $${at + 4}::bigint, $${at + 5}, $${at + 6}::uuid, $${at + 7}::bigint, $${at + 8})`;
    });
    const moved = updatedRows<{ account_id: string; balance_minor: string; currency: string }>(
      await tx.query(
        `WITH entries AS (
           INSERT INTO ledger_entry
             (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, payout_id, fence, kind)
           VALUES ${rows.join(', ')}
           RETURNING account_id, amount_minor),
         deltas AS (SELECT account_id, sum(amount_minor) AS delta FROM entries GROUP BY account_id)
         UPDATE account a
            SET balance_minor = a.balance_minor + d.delta, version = a.version + 1,
                updated_at = date_trunc('milliseconds', clock_timestamp())
           FROM deltas d
          WHERE a.account_id = d.account_id
          RETURNING a.account_id, a.balance_minor, a.currency`,
        values,
      ),
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
    const rows: { total: string }[] = await db.query(
      `SELECT COALESCE(sum(amount_minor), 0)::bigint AS total FROM ledger_entry WHERE account_id = $1`,
      [accountId],
    );
    return toMinor(rows[0].total);
  }
}
