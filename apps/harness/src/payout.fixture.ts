import { randomUUID } from 'node:crypto';
import { railClientRef } from '@dlock/payout-contract';
import { rowId } from '@dlock/persistence';
import type { Client } from 'pg';
import { withPg } from './infra/postgres.infra';

/**
 * Accounts and payouts for a scenario, written straight into paydb the way
 * the payment-resource's fixture CLI does (out of band, never on the worker
 * path): an opening balance is a balanced ledger movement from the funding
 * account, so INV-03 holds from the first row.
 */
export interface ScenarioFixture {
  accountIds: string[];
  payoutIds: string[];
  /** payoutId → accountId */
  accountOf: Map<string, string>;
}

const CURRENCY = 'EUR';

export async function createFixture(
  paydbUrl: string,
  o: {
    prefix: string;
    accounts: number;
    payoutsPerAccount: number;
    amountMinor?: number;
    openingMinor?: number;
  },
): Promise<ScenarioFixture> {
  const fx: ScenarioFixture = { accountIds: [], payoutIds: [], accountOf: new Map() };
  await withPg(paydbUrl, async (c) => {
    await c.query('BEGIN');
    try {
      await ensureSystemAccounts(c);
      for (let a = 0; a < o.accounts; a++) {
        const accountId = `${o.prefix}-${a}-${randomUUID().slice(0, 8)}`;
        await openAccount(c, accountId, o.openingMinor ?? 10_000_000);
        fx.accountIds.push(accountId);
        for (let p = 0; p < o.payoutsPerAccount; p++) {
          const payoutId = await addPayout(c, accountId, o.amountMinor ?? 1_000 + p);
          fx.payoutIds.push(payoutId);
          fx.accountOf.set(payoutId, accountId);
        }
      }
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    }
  });
  return fx;
}

/** More PENDING payouts on existing accounts (the soak's steady inflow). */
export async function addPayouts(
  paydbUrl: string,
  accountIds: string[],
  perAccount: number,
  amountMinor: number,
): Promise<string[]> {
  const ids: string[] = [];
  await withPg(paydbUrl, async (c) => {
    for (const accountId of accountIds) {
      for (let i = 0; i < perAccount; i++) ids.push(await addPayout(c, accountId, amountMinor));
    }
  });
  return ids;
}

async function ensureSystemAccounts(c: Client): Promise<void> {
  for (const [id, kind] of [
    [`funding-${CURRENCY}`, 'FUNDING'],
    [`clearing-${CURRENCY}`, 'CLEARING'],
  ]) {
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [id, kind, CURRENCY],
    );
  }
}

async function openAccount(c: Client, accountId: string, openingMinor: number): Promise<void> {
  const funding = `funding-${CURRENCY}`;
  await c.query(`INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', $2)`, [
    accountId,
    CURRENCY,
  ]);
  const group = rowId();
  await c.query(
    `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
     VALUES ($1, $3, $4, -$2::bigint, $5, 'OPENING_BALANCE'), ($6, $3, $5, $2::bigint, $4, 'OPENING_BALANCE')`,
    [rowId(), openingMinor, group, funding, accountId, rowId()],
  );
  await c.query(
    `UPDATE account SET balance_minor = balance_minor + CASE WHEN account_id = $1 THEN -$3::bigint ELSE $3::bigint END
      WHERE account_id IN ($1, $2)`,
    [funding, accountId, openingMinor],
  );
}

async function addPayout(c: Client, accountId: string, amountMinor: number): Promise<string> {
  const payoutId = rowId();
  await c.query(
    `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      payoutId,
      accountId,
      amountMinor,
      CURRENCY,
      `ben-${payoutId.slice(0, 8)}`,
      railClientRef(payoutId),
    ],
  );
  return payoutId;
}

export async function payoutStates(paydbUrl: string, ids: string[]): Promise<Map<string, string>> {
  return withPg(paydbUrl, async (c) => {
    const r = await c.query<{ payout_id: string; state: string }>(
      `SELECT payout_id, state FROM payout WHERE payout_id = ANY($1::uuid[])`,
      [ids],
    );
    return new Map(r.rows.map((x) => [x.payout_id, x.state]));
  });
}
