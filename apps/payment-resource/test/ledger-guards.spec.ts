import { randomUUID } from 'node:crypto';
import { withClient } from '@dlock/testing';
import { bodies, ledgerInvariants, startPaymentResource, write, type Harness } from './support';

/**
 * The ledger's own guards in paydb (docs/payment-resource.md, "Ledger"): they
 * hold whatever the application does, so these tests write around it, straight
 * into the database, and expect PostgreSQL to refuse.
 */
describe('ledger guards in paydb', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  async function postedPayout(): Promise<{ accountId: string; payoutId: string }> {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 10_000,
    });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    for (const [op, body] of [
      ['claim', bodies.claim()],
      ['rail-outcome', bodies.submitted()],
      ['rail-outcome', bodies.acked()],
      ['post', bodies.post()],
    ] as const) {
      expect((await write(h.base, op, payoutId, 7n, body)).status).toBe(200);
    }
    return { accountId, payoutId };
  }

  /** One movement group, inserted in one transaction the way the service would. */
  async function insertGroup(
    legs: { accountId: string; amountMinor: number; counterparty: string }[],
    payoutId: string | null,
  ): Promise<void> {
    const group = randomUUID();
    await withClient(h.dbUrl, async (c) => {
      await c.query('BEGIN');
      try {
        for (const leg of legs) {
          await c.query(
            `INSERT INTO ledger_entry
               (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, payout_id, fence, kind)
             VALUES ($1, $2, $3, $4, $5, $6, 8, 'PAYOUT')`,
            [randomUUID(), group, leg.accountId, leg.amountMinor, leg.counterparty, payoutId],
          );
        }
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK');
        throw err;
      }
    });
  }

  async function entryCount(): Promise<number> {
    return withClient(h.dbUrl, async (c) =>
      Number((await c.query(`SELECT count(*) AS n FROM ledger_entry`)).rows[0].n),
    );
  }

  it('refuses a group that sums below zero, and one that sums above it, at commit', async () => {
    const { accountId } = await postedPayout();
    const before = await entryCount();
    const leg = (amountMinor: number, a: string, b: string) => ({
      accountId: a,
      amountMinor,
      counterparty: b,
    });
    await expect(
      insertGroup(
        [leg(-1_000, accountId, 'clearing-EUR'), leg(999, 'clearing-EUR', accountId)],
        null,
      ),
    ).rejects.toThrow(/sums to -1, not zero/);
    await expect(
      insertGroup(
        [leg(-999, accountId, 'clearing-EUR'), leg(1_000, 'clearing-EUR', accountId)],
        null,
      ),
    ).rejects.toThrow(/sums to 1, not zero/);
    expect(await entryCount()).toBe(before);
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('refuses a second posting of one payout on the same account, even a balanced one', async () => {
    const { accountId, payoutId } = await postedPayout();
    const before = await entryCount();
    await expect(
      insertGroup(
        [
          { accountId, amountMinor: -1_000, counterparty: 'clearing-EUR' },
          { accountId: 'clearing-EUR', amountMinor: 1_000, counterparty: accountId },
        ],
        payoutId,
      ),
    ).rejects.toThrow(/ledger_entry_payout_once/);
    expect(await entryCount()).toBe(before);
  });

  it('a replayed P3 under a newer token posts nothing more', async () => {
    const { accountId, payoutId } = await postedPayout();
    const before = await entryCount();
    const again = await write(h.base, 'post', payoutId, 9n, bodies.post());
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('PAYOUT_NOT_CLAIMABLE');
    expect(await entryCount()).toBe(before);
    await withClient(h.dbUrl, async (c) => {
      const rows = await c.query(
        `SELECT count(*) AS n FROM ledger_entry WHERE payout_id = $1 AND account_id = $2`,
        [payoutId, accountId],
      );
      expect(Number(rows.rows[0].n)).toBe(1);
    });
  });
});
