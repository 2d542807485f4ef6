import { withClient } from '@dlock/testing';
import { clearingAccountFor } from '../src/ledger/domain/ledger.rules';
import { bodies, ledgerInvariants, startPaymentResource, write, type Harness } from './support';

const SHARDS = 4;
const ACCOUNTS = 6;
const PER_ACCOUNT = 3;
const AMOUNT = 700;

/** One payout through claim → SUBMITTED → ACKED → post under one token (as one grant would). */
async function payThrough(h: Harness, payoutId: string, token: bigint, submissionId: string) {
  for (const [op, body] of [
    ['claim', bodies.claim()],
    ['rail-outcome', bodies.submitted()],
    ['rail-outcome', bodies.acked(submissionId)],
  ] as const) {
    expect((await write(h.base, op, payoutId, token, body)).status).toBe(200);
  }
  return write(h.base, 'post', payoutId, token, bodies.post(submissionId));
}

describe('sharded payout clearing (PAYMENT_CLEARING_SHARDS)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource({ PAYMENT_CLEARING_SHARDS: String(SHARDS) });
  });
  afterAll(() => h.close());

  it('credits the payout’s stable shard; every group sums to zero and every balance equals its ledger', async () => {
    const accounts: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      accounts.push(
        await h.fixtures.createAccount({ currency: 'EUR', openingBalanceMinor: 100_000 }),
      );
    }
    const lanes = accounts.map(async (accountId, a) => {
      const posted: { payoutId: string; credit: string }[] = [];
      for (let i = 0; i < PER_ACCOUNT; i++) {
        const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: AMOUNT });
        const submissionId = `00000000-0000-4000-8000-${String(a * 100 + i).padStart(12, '0')}`;
        const res = await payThrough(h, payoutId, BigInt(10 + i), submissionId);
        expect(res.status).toBe(200);
        const entries = (res.body as { entries: { accountId: string; direction: string }[] })
          .entries;
        expect(entries.map((e) => e.direction)).toEqual(['DEBIT', 'CREDIT']);
        expect(entries[0].accountId).toBe(accountId);
        posted.push({ payoutId, credit: entries[1].accountId });
      }
      return posted;
    });
    // Lanes of different accounts post concurrently, as the executor's lanes do.
    const posted = (await Promise.all(lanes)).flat();
    for (const p of posted) expect(p.credit).toBe(clearingAccountFor('EUR', p.payoutId, SHARDS));
    expect(new Set(posted.map((p) => p.credit)).size).toBeGreaterThan(1);

    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
    const clearing = await withClient(h.dbUrl, async (c) => {
      const rows = await c.query<{ account_id: string; balance: string }>(
        `SELECT account_id, balance_minor::text AS balance FROM account
          WHERE kind = 'CLEARING' AND currency = 'EUR' ORDER BY account_id`,
      );
      return rows.rows;
    });
    // Only shard accounts exist, and together they hold exactly what was paid out.
    for (const r of clearing) expect(r.account_id).toMatch(/^clearing-EUR-0[0-3]$/);
    const total = clearing.reduce((s, r) => s + Number(r.balance), 0);
    expect(total).toBe(ACCOUNTS * PER_ACCOUNT * AMOUNT);
  });

  it('the schema holds clearing ids to the scheme and funding to one per currency', async () => {
    await withClient(h.dbUrl, async (c) => {
      const insert = (id: string, kind: string, currency = 'EUR') =>
        c.query(`INSERT INTO account (account_id, kind, currency) VALUES ($1, $2, $3)`, [
          id,
          kind,
          currency,
        ]);
      for (const bad of ['clearing-EUR-7', 'clearing-EUR-007', 'clearing-GBP-01', 'clear-EUR']) {
        await expect(insert(bad, 'CLEARING')).rejects.toThrow(/account_clearing_id_scheme/);
      }
      await c.query(
        `INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR')
         ON CONFLICT DO NOTHING`,
      );
      await expect(insert('funding-EUR-2', 'FUNDING')).rejects.toThrow(
        /account_funding_per_currency/,
      );
      await insert('clearing-GBP', 'CLEARING', 'GBP');
      await insert('clearing-GBP-09', 'CLEARING', 'GBP');
    });
  });
});
