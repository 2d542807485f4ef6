import { randomUUID } from 'node:crypto';
// payout-protocol.ts, not the @dlock/payout-contract index, which loads its HTTP clients (proofs.ts).
import { railClientRef } from '../../payout-contract/src/payout-protocol';
import { withClient } from './postgres';

/**
 * Test seeds for paydb, written as the payment-resource fixture CLI writes
 * them: a customer account funded through a balanced OPENING_BALANCE ledger
 * pair (so balance = ledger sum from the start), and PENDING payouts whose
 * client_ref is derived from the payout id.
 */
export async function seedFundedAccount(
  paydb: string,
  balanceMinor = 1_000_000,
  accountId = `acct-${randomUUID().slice(0, 8)}`,
): Promise<string> {
  await withClient(paydb, async (c) => {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR')
       ON CONFLICT DO NOTHING`,
    );
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', 'EUR')`,
      [accountId],
    );
    await c.query(
      `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
       VALUES ($1, $3, 'funding-EUR', -$4::bigint, $2, 'OPENING_BALANCE'),
              ($5, $3, $2, $4::bigint, 'funding-EUR', 'OPENING_BALANCE')`,
      [randomUUID(), accountId, randomUUID(), balanceMinor, randomUUID()],
    );
    await c.query(
      `UPDATE account SET balance_minor = balance_minor - $1 WHERE account_id = 'funding-EUR'`,
      [balanceMinor],
    );
    await c.query(`UPDATE account SET balance_minor = balance_minor + $1 WHERE account_id = $2`, [
      balanceMinor,
      accountId,
    ]);
    await c.query('COMMIT');
  });
  return accountId;
}

export async function seedPendingPayout(
  paydb: string,
  accountId: string,
  amountMinor = 1_000,
): Promise<string> {
  const payoutId = randomUUID();
  await withClient(paydb, (c) =>
    c.query(
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       VALUES ($1, $2, $3, 'EUR', $4, $5)`,
      [payoutId, accountId, amountMinor, `ben-${payoutId.slice(0, 8)}`, railClientRef(payoutId)],
    ),
  );
  return payoutId;
}
