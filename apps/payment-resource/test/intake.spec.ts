import { randomUUID } from 'node:crypto';
import { http, withClient } from '@dlock/testing';
import { startPaymentResource, type Harness } from './support';

/**
 * The payouts API: accounts, deposits and payouts come in over HTTP under an
 * `Idempotency-Key` (docs/payment-resource.md). Real app on a real port, real paydb.
 */
const TRACE = expect.stringMatching(/^[0-9a-f]{32}$/);

let h: Harness;
beforeAll(async () => {
  h = await startPaymentResource();
});
afterAll(() => h?.close());

/** `key` null: no Idempotency-Key header at all. */
function post(path: string, body: unknown, key: string | null = randomUUID()) {
  const headers: Record<string, string> = {};
  if (key !== null) headers['idempotency-key'] = key;
  return http('POST', `${h.base}${path}`, { headers, body });
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  return withClient(h.dbUrl, async (c) => Number((await c.query(sql, params)).rows[0].n));
}

async function openAccount(currency = 'EUR'): Promise<string> {
  const res = await post('/v1/accounts', { currency });
  expect(res.status).toBe(201);
  return res.body.accountId as string;
}

describe('POST /v1/accounts', () => {
  it('opens an empty customer account, and the same key and body answer it again', async () => {
    const key = randomUUID();
    const first = await post('/v1/accounts', { currency: 'EUR', accountId: 'acct-api-1' }, key);
    expect({ status: first.status, body: first.body }).toEqual({
      status: 201,
      body: {
        accountId: 'acct-api-1',
        kind: 'CUSTOMER',
        currency: 'EUR',
        balanceMinor: 0,
        fence: '0',
      },
    });
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post('/v1/accounts', { accountId: 'acct-api-1', currency: 'EUR' }, key);
    expect({ status: again.status, body: again.body }).toEqual({ status: 201, body: first.body });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const read = await http('GET', `${h.base}/v1/accounts/acct-api-1`);
    expect(read.body).toMatchObject({
      accountId: 'acct-api-1',
      balanceMinor: 0,
      ledgerSumMinor: 0,
    });
  });

  it('refuses a taken id, a system account name and a different body under a used key', async () => {
    const key = randomUUID();
    await post('/v1/accounts', { currency: 'EUR', accountId: 'acct-api-2' }, key);
    const conflict = await post('/v1/accounts', { currency: 'USD', accountId: 'acct-api-2' }, key);
    expect({ status: conflict.status, body: conflict.body }).toEqual({
      status: 422,
      body: {
        code: 'IDEMPOTENCY_CONFLICT',
        message: 'this Idempotency-Key was used with a different request',
        retrySafe: false,
        details: { idempotencyKey: key },
        traceId: TRACE,
      },
    });
    const taken = await post('/v1/accounts', { currency: 'EUR', accountId: 'acct-api-2' });
    expect(taken.status).toBe(400);
    expect(taken.body.details).toEqual({
      fields: [{ field: 'accountId', message: 'is taken by another account' }],
    });
    const system = await post('/v1/accounts', { currency: 'EUR', accountId: 'funding-GBP' });
    expect(system.status).toBe(400);
    expect(system.body.details).toEqual({
      fields: [{ field: 'accountId', message: 'names a system account' }],
    });
    expect(await count(`SELECT count(*) AS n FROM account WHERE account_id = 'funding-GBP'`)).toBe(
      0,
    );
  });
});

describe('POST /v1/accounts/{accountId}/deposits', () => {
  it('moves money from the funding account, balanced, once per key', async () => {
    const accountId = await openAccount();
    const key = randomUUID();
    const first = await post(
      `/v1/accounts/${accountId}/deposits`,
      { amountMinor: 5_000, currency: 'EUR' },
      key,
    );
    expect({ status: first.status, body: first.body }).toEqual({
      status: 201,
      body: {
        depositId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        accountId,
        amountMinor: 5_000,
        currency: 'EUR',
        balanceMinor: 5_000,
      },
    });
    const again = await post(
      `/v1/accounts/${accountId}/deposits`,
      { currency: 'EUR', amountMinor: 5_000 },
      key,
    );
    expect(again.body).toEqual(first.body);
    const account = await http('GET', `${h.base}/v1/accounts/${accountId}`);
    expect(account.body).toMatchObject({ balanceMinor: 5_000, ledgerSumMinor: 5_000 });
    expect(
      await count(
        `SELECT count(*) AS n FROM ledger_entry WHERE txn_group_id = $1 AND kind = 'DEPOSIT'`,
        [first.body.depositId],
      ),
    ).toBe(2);
    expect(
      await count(
        `SELECT COALESCE(sum(amount_minor), 0) AS n FROM ledger_entry WHERE txn_group_id = $1`,
        [first.body.depositId],
      ),
    ).toBe(0);
  });

  it('answers 404 for an unknown or system account and 400 for another currency', async () => {
    const unknown = await post('/v1/accounts/acct-nobody/deposits', {
      amountMinor: 1,
      currency: 'EUR',
    });
    expect({ status: unknown.status, body: unknown.body }).toEqual({
      status: 404,
      body: {
        code: 'NOT_FOUND',
        message: 'no such account',
        retrySafe: false,
        details: { accountId: 'acct-nobody' },
        traceId: TRACE,
      },
    });
    expect(
      (await post('/v1/accounts/funding-EUR/deposits', { amountMinor: 1, currency: 'EUR' })).status,
    ).toBe(404);
    const accountId = await openAccount();
    const other = await post(`/v1/accounts/${accountId}/deposits`, {
      amountMinor: 1,
      currency: 'USD',
    });
    expect(other.status).toBe(400);
    expect(other.body.details).toEqual({
      fields: [{ field: 'currency', message: "must be the account's currency (EUR)" }],
    });
  });
});

describe('POST /v1/payouts', () => {
  it('gives payouts time-ordered ids: a later payout sorts after an earlier one in PostgreSQL (docs/scale.md, "Row ids")', async () => {
    const accountId = await openAccount();
    const body = { accountId, amountMinor: 10, currency: 'EUR', beneficiaryRef: 'ben-order' };
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const created = await post('/v1/payouts', body, randomUUID());
      expect(created.status).toBe(201);
      ids.push(created.body.payoutId as string);
      await new Promise((resolve) => setTimeout(resolve, 2)); // the next id's millisecond is later
    }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab]/);
    const ordered = await withClient(h.dbUrl, async (c) =>
      (
        await c.query<{ payout_id: string }>(
          'SELECT payout_id FROM payout WHERE account_id = $1 ORDER BY payout_id',
          [accountId],
        )
      ).rows.map((r) => r.payout_id),
    );
    expect(ordered).toEqual(ids);
  });

  it('creates a PENDING payout with the derived rail reference, once per key', async () => {
    const accountId = await openAccount();
    const key = randomUUID();
    const body = { accountId, amountMinor: 1_250, currency: 'EUR', beneficiaryRef: 'ben-42' };
    const first = await post('/v1/payouts', body, key);
    expect(first.status).toBe(201);
    const payoutId = first.body.payoutId as string;
    expect(first.body).toEqual({
      payoutId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      accountId,
      amountMinor: 1_250,
      currency: 'EUR',
      beneficiaryRef: 'ben-42',
      clientRef: `po-${payoutId}`,
      state: 'PENDING',
    });
    expect((await post('/v1/payouts', body, key)).body).toEqual(first.body);
    const read = await http('GET', `${h.base}/v1/payouts/${payoutId}`);
    expect(read.body).toMatchObject({ payoutId, state: 'PENDING', amountMinor: 1_250 });
    expect(await count(`SELECT count(*) AS n FROM payout WHERE account_id = $1`, [accountId])).toBe(
      1,
    );
  });

  it('creates once when the same request arrives many times at once', async () => {
    const accountId = await openAccount();
    const key = randomUUID();
    const body = { accountId, amountMinor: 700, currency: 'EUR', beneficiaryRef: 'ben-7' };
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => post('/v1/payouts', body, key)),
    );
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([201]));
    expect(new Set(answers.map((a) => a.body.payoutId)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await count(`SELECT count(*) AS n FROM payout WHERE account_id = $1`, [accountId])).toBe(
      1,
    );
  });

  it('answers 404 for an unknown account, and the key stays free for a corrected request', async () => {
    const key = randomUUID();
    const body = {
      accountId: 'acct-missing',
      amountMinor: 10,
      currency: 'EUR',
      beneficiaryRef: 'b',
    };
    expect((await post('/v1/payouts', body, key)).status).toBe(404);
    const accountId = await openAccount();
    const fixed = await post('/v1/payouts', { ...body, accountId }, key);
    expect(fixed.status).toBe(201);
  });

  const valid = { accountId: 'acct-x', amountMinor: 10, currency: 'EUR', beneficiaryRef: 'b' };
  it.each([
    ['amount 0', { ...valid, amountMinor: 0 }, 'amountMinor'],
    ['a fractional amount', { ...valid, amountMinor: 1.5 }, 'amountMinor'],
    ['an amount as a string', { ...valid, amountMinor: '10' }, 'amountMinor'],
    ['an amount past 2^53', { ...valid, amountMinor: 9007199254740993n }, 'amountMinor'],
    ['a lower-case currency', { ...valid, currency: 'eur' }, 'currency'],
    ['an oversized account id', { ...valid, accountId: 'a'.repeat(65) }, 'accountId'],
    ['an unknown field', { ...valid, payoutId: randomUUID() }, 'payoutId'],
    ['no beneficiary', { accountId: 'acct-x', amountMinor: 10, currency: 'EUR' }, 'beneficiaryRef'],
  ])('refuses %s with 400 and creates nothing', async (_name, body, field) => {
    const before = await count(`SELECT count(*) AS n FROM payout`);
    const res = await post('/v1/payouts', body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect((res.body.details.fields as { field: string }[]).map((f) => f.field)).toContain(field);
    expect(await count(`SELECT count(*) AS n FROM payout`)).toBe(before);
  });

  it.each([
    ['missing', null, 'header is required'],
    ['oversized', 'k'.repeat(129), 'must be 1..128 visible ASCII characters'],
  ])('refuses a %s Idempotency-Key with 400', async (_name, key, message) => {
    const res = await post('/v1/payouts', valid, key);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 400,
      body: {
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [{ field: 'Idempotency-Key', message }] },
        traceId: TRACE,
      },
    });
  });
});
