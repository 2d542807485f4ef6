import { sqlRows } from '@dlock/persistence';
import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { toBigint, toMinor, type Db } from '../../persistence/paydb.sql';

export type AccountKind = 'CUSTOMER' | 'CLEARING' | 'FUNDING';

export interface Account {
  accountId: string;
  kind: AccountKind;
  currency: string;
  balanceMinor: number;
  fence: bigint;
  version: number;
  updatedAt: Date;
}

interface AccountRow {
  account_id: string;
  kind: AccountKind;
  currency: string;
  balance_minor: string;
  fence: string;
  version: number;
  updated_at: Date;
}

function fromRow(r: AccountRow): Account {
  return {
    accountId: r.account_id,
    kind: r.kind,
    currency: r.currency,
    balanceMinor: toMinor(r.balance_minor),
    fence: toBigint(r.fence),
    version: r.version,
    updatedAt: r.updated_at,
  };
}

const COLUMNS = `account_id, kind, currency, balance_minor, fence, version, updated_at`;

/**
 * What the account row `account` can still pay: its balance less the
 * payouts that may still leave it (claimed, at the rail, or ambiguous), the
 * payout `exceptPayoutId` (an SQL expression) excepted. As of the statement's
 * snapshot for the payouts, of the row given for the balance.
 */
export const AVAILABLE = (account: string, exceptPayoutId: string): string =>
  `${account}.balance_minor - COALESCE(
     (SELECT sum(o.amount_minor) FROM payout o
       WHERE o.account_id = ${account}.account_id AND o.payout_id <> ${exceptPayoutId}
         AND o.state IN ('CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED', 'RAIL_AMBIGUOUS')),
     0)::bigint`;

@Injectable()
export class AccountRepository {
  async find(db: Db, accountId: string): Promise<Account | null> {
    const rows: AccountRow[] = await sqlRows(
      db,
      `SELECT ${COLUMNS} FROM account WHERE account_id = $1`,
      [accountId],
    );
    return rows.length === 1 ? fromRow(rows[0]) : null;
  }

  /**
   * Customer accounts in byte order of their ids (the order rail-proxy lists
   * its marks in), at most `limit`: the console's per-account view.
   */
  async listCustomers(db: Db, limit: number): Promise<Account[]> {
    const rows: AccountRow[] = await sqlRows(
      db,
      `SELECT ${COLUMNS} FROM account WHERE kind = 'CUSTOMER'
        ORDER BY account_id COLLATE "C" LIMIT $1`,
      [limit],
    );
    return rows.map(fromRow);
  }

  /**
   * What the account can still pay: its balance less the payouts that
   * may still leave it (claimed, at the rail, or ambiguous), this one excepted.
   */
  async availableMinor(tx: Db, accountId: string, exceptPayoutId: string): Promise<number> {
    const rows: { available: string }[] = await sqlRows(
      tx,
      `SELECT ${AVAILABLE('a', '$2')} AS available FROM account a WHERE a.account_id = $1`,
      [accountId, exceptPayoutId],
    );
    assert.equal(rows.length, 1, `account ${accountId} vanished`);
    return toMinor(rows[0].available);
  }

  /** Serialises an unfenced write (operator abandon) with every fenced writer of the account. */
  async lock(tx: Db, accountId: string): Promise<Account> {
    const rows: AccountRow[] = await sqlRows(
      tx,
      `SELECT ${COLUMNS} FROM account WHERE account_id = $1 FOR UPDATE`,
      [accountId],
    );
    assert.equal(rows.length, 1, `account ${accountId} vanished`);
    return fromRow(rows[0]);
  }

  async count(db: Db, kind: AccountKind): Promise<number> {
    const rows: { n: number }[] = await sqlRows(
      db,
      `SELECT count(*)::int AS n FROM account WHERE kind = $1`,
      [kind],
    );
    return rows[0].n;
  }

  /** Ids of accounts of one kind, oldest first (fixtures only; bounded by `limit`). */
  async listIds(db: Db, kind: AccountKind, limit: number): Promise<string[]> {
    const rows: { account_id: string }[] = await sqlRows(
      db,
      `SELECT account_id FROM account WHERE kind = $1 ORDER BY account_id LIMIT $2`,
      [kind, limit],
    );
    return rows.map((r) => r.account_id);
  }

  async insert(tx: Db, a: { accountId: string; kind: AccountKind; currency: string }) {
    await sqlRows(tx, `INSERT INTO account (account_id, kind, currency) VALUES ($1, $2, $3)`, [
      a.accountId,
      a.kind,
      a.currency,
    ]);
  }

  /** A new customer account; false when the id is taken. */
  async insertCustomer(tx: Db, accountId: string, currency: string): Promise<boolean> {
    const rows: unknown[] = await sqlRows(
      tx,
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', $2)
       ON CONFLICT DO NOTHING RETURNING 1`,
      [accountId, currency],
    );
    return rows.length === 1;
  }

  /** System accounts (clearing, funding) appear on first use, one per currency. */
  async ensureSystem(tx: Db, accountId: string, kind: AccountKind, currency: string) {
    await sqlRows(
      tx,
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, $2, $3)
       ON CONFLICT DO NOTHING`,
      [accountId, kind, currency],
    );
  }
}
