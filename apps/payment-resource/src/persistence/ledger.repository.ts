import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Leg } from '../domain/ledger';
import { toMinor, type Db } from './db';

export interface LedgerEntry extends Leg {
  entryId: string;
  txnGroupId: string;
}

@Injectable()
export class LedgerRepository {
  /** Appends one movement; the deferred trigger re-checks at commit that the group sums to zero. */
  async append(
    tx: Db,
    legs: readonly Leg[],
    meta: { kind: 'OPENING_BALANCE' | 'PAYOUT'; payoutId?: string; fence?: bigint },
  ): Promise<LedgerEntry[]> {
    const txnGroupId = randomUUID();
    const entries = legs.map((leg) => ({ ...leg, entryId: randomUUID(), txnGroupId }));
    // One statement for all legs: one round trip inside the transaction.
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
      return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}, $${at + 6}, $${at + 7}, $${at + 8})`;
    });
    await tx.query(
      `INSERT INTO ledger_entry
         (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, payout_id, fence, kind)
       VALUES ${rows.join(', ')}`,
      values,
    );
    return entries;
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
