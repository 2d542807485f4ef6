import { http } from '@dlock/testing';
import { PAYOUT_STATES } from '@dlock/payout-contract';
import { OWNER_B, bodies, startPaymentResource, write, type Harness } from './support';

const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);
const VALIDATION_FAILED = {
  code: 'VALIDATION_FAILED',
  message: expect.any(String),
  retrySafe: false,
  details: { fields: [{ field: expect.any(String), message: expect.any(String) }] },
  traceId: TRACE_ID,
};
const BAD_INTEGERS = ['0', '-1', 'abc', '1e2', '10.0', '010', '', ' 5'];
const zeroStates = () => Object.fromEntries(PAYOUT_STATES.map((s) => [s, 0]));

/** Drives a fresh payout PENDING → POSTED with one token (claim, rail outcomes, post). */
async function post(h: Harness, payoutId: string, token: bigint): Promise<void> {
  for (const [op, body] of [
    ['claim', bodies.claim()],
    ['rail-outcome', bodies.submitted()],
    ['rail-outcome', bodies.acked()],
    ['post', bodies.post()],
  ] as const) {
    const res = await write(h.base, op, payoutId, token, body);
    expect([op, res.status]).toEqual([op, 200]);
  }
}

describe('GET /v1/accounts (console)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  it('lists customer accounts by id with balance and fence as P5 shows them ("0" before any fenced write)', async () => {
    expect((await http('GET', `${h.base}/v1/accounts`)).body).toEqual({
      accounts: [],
      truncated: false,
    });
    await h.fixtures.createAccount({
      accountId: 'acc-b',
      currency: 'EUR',
      openingBalanceMinor: 500,
    });
    await h.fixtures.createAccount({ accountId: 'acc-a', currency: 'GBP', openingBalanceMinor: 0 });
    const payoutId = await h.fixtures.createPayout({ accountId: 'acc-b', amountMinor: 100 });
    await post(h, payoutId, 42n);

    const res = await http('GET', `${h.base}/v1/accounts`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accounts: [
        { accountId: 'acc-a', currency: 'GBP', balanceMinor: 0, fence: '0' },
        { accountId: 'acc-b', currency: 'EUR', balanceMinor: 400, fence: '42' },
      ],
      truncated: false,
    });
    const single = await http('GET', `${h.base}/v1/accounts/acc-b`);
    expect(single.body).toMatchObject({ balanceMinor: 400, fence: '42', ledgerSumMinor: 400 });

    expect((await http('GET', `${h.base}/v1/accounts?limit=1`)).body).toEqual({
      accounts: [{ accountId: 'acc-a', currency: 'GBP', balanceMinor: 0, fence: '0' }],
      truncated: true,
    });
    expect((await http('GET', `${h.base}/v1/accounts?limit=2`)).body.truncated).toBe(false);
  });

  it.each([...BAD_INTEGERS, '501'].map((v) => [v]))(
    'rejects limit=%j with 400 VALIDATION_FAILED',
    async (v) => {
      const res = await http('GET', `${h.base}/v1/accounts?limit=${encodeURIComponent(v)}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(VALIDATION_FAILED);
    },
  );

  it('rejects a repeated or unknown parameter with 400 VALIDATION_FAILED', async () => {
    for (const q of ['limit=1&limit=2', 'cursor=abc']) {
      const res = await http('GET', `${h.base}/v1/accounts?${q}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(VALIDATION_FAILED);
    }
  });

  it('serves a fenced write as a fenced_out event at GET /v1/safety-events', async () => {
    const payoutId = await h.fixtures.createPayout({ accountId: 'acc-b', amountMinor: 10 });
    const stale = await write(h.base, 'claim', payoutId, 41n, bodies.claim(), { owner: OWNER_B });
    expect(stale.status).toBe(409);
    const res = await http('GET', `${h.base}/v1/safety-events`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      service: 'payment-resource',
      events: [
        {
          seq: 1,
          at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
          event: 'fenced_out',
          fields: {
            resource: 'account',
            resourceId: 'acc-b',
            presentedToken: '41',
            highestToken: '42',
            ownerId: OWNER_B,
            traceId: TRACE_ID,
          },
          count: 1,
          lastAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        },
      ],
      nextAfter: 1,
    });
    expect((await http('GET', `${h.base}/v1/safety-events?after=1`)).body).toEqual({
      service: 'payment-resource',
      events: [],
      nextAfter: 1,
    });
    for (const q of ['after=-1', 'after=1.5', 'limit=0', 'limit=501', 'after=x', 'since=1']) {
      const bad = await http('GET', `${h.base}/v1/safety-events?${q}`);
      expect([q, bad.status]).toEqual([q, 400]);
      expect(bad.body).toEqual(VALIDATION_FAILED);
    }
  });
});

describe('GET /v1/payouts/stats (console)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  const stats = (q = '') => http('GET', `${h.base}/v1/payouts/stats${q}`);

  it('answers every state at 0, empty buckets and null percentiles when nothing was posted', async () => {
    const res = await stats('?windowSeconds=60');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      windowSeconds: 60,
      byState: zeroStates(),
      postedPerBucket: expect.any(Array),
      bucketSeconds: 10,
      latencyMillis: { p50: null, p90: null, p99: null, count: 0 },
      latencyMillisAllTime: { p50: null, p90: null, p99: null, count: 0 },
    });
    expect(res.body.postedPerBucket).toHaveLength(7);
    expect(res.body.postedPerBucket.every((b: { count: number }) => b.count === 0)).toBe(true);
  });

  it('counts payouts by state, posted ones per aligned 10 s bucket, and their latency percentiles', async () => {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 10_000,
    });
    const ids = [];
    for (let i = 0; i < 4; i++)
      ids.push(await h.fixtures.createPayout({ accountId, amountMinor: 10 }));
    await post(h, ids[0], 10n);
    await post(h, ids[1], 11n);
    await write(h.base, 'claim', ids[2], 12n, bodies.claim());
    await write(h.base, 'rail-outcome', ids[2], 12n, bodies.submitted());
    expect((await write(h.base, 'rail-outcome', ids[2], 12n, bodies.ambiguous())).status).toBe(200);

    const res = await stats();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      windowSeconds: 300,
      byState: { ...zeroStates(), PENDING: 1, POSTED: 2, RAIL_AMBIGUOUS: 1 },
      postedPerBucket: expect.any(Array),
      bucketSeconds: 10,
      latencyMillis: {
        p50: expect.any(Number),
        p90: expect.any(Number),
        p99: expect.any(Number),
        count: 2,
      },
      latencyMillisAllTime: {
        p50: expect.any(Number),
        p90: expect.any(Number),
        p99: expect.any(Number),
        count: 2,
      },
    });
    const buckets: { at: string; count: number }[] = res.body.postedPerBucket;
    expect(buckets).toHaveLength(31);
    expect(buckets.reduce((n, b) => n + b.count, 0)).toBe(2);
    for (const [i, b] of buckets.entries()) {
      expect(Date.parse(b.at) % 10_000).toBe(0);
      if (i > 0) expect(Date.parse(b.at) - Date.parse(buckets[i - 1].at)).toBe(10_000);
    }
    expect(Date.now() - Date.parse(buckets[30].at)).toBeLessThan(20_000);
    const { p50, p90, p99 } = res.body.latencyMillis;
    expect(0 <= p50 && p50 <= p90 && p90 <= p99 && p99 < 60_000).toBe(true);
    // All time comes from the maintained histogram (buckets about 5 % wide): the same two
    // payouts, so its p99 is the slower one's bucket, near the window's interpolated p99.
    const all = res.body.latencyMillisAllTime;
    expect(all.p50 <= all.p90 && all.p90 <= all.p99).toBe(true);
    expect(Math.abs(all.p99 - p99)).toBeLessThanOrEqual(Math.max(2, 0.06 * p99));

    // The ambiguous queue is P1 with a state filter.
    const queue = await http('GET', `${h.base}/v1/payouts?state=RAIL_AMBIGUOUS`);
    expect(queue.status).toBe(200);
    expect(queue.body.items.map((p: { payoutId: string }) => p.payoutId)).toEqual([ids[2]]);
  });

  it.each([...BAD_INTEGERS, '9', '3601', '300s'].map((v) => [v]))(
    'rejects windowSeconds=%j with 400 VALIDATION_FAILED',
    async (v) => {
      const res = await stats(`?windowSeconds=${encodeURIComponent(v)}`);
      expect(res.status).toBe(400);
      expect(res.body).toEqual(VALIDATION_FAILED);
    },
  );

  it('rejects an unknown parameter (a limit has no meaning here)', async () => {
    const res = await stats('?limit=10');
    expect(res.status).toBe(400);
    expect(res.body).toEqual(VALIDATION_FAILED);
  });
});
