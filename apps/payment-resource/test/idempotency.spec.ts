import { http, withClient } from '@dlock/testing';
import {
  SUBMISSION_ID,
  bodies,
  keyFor,
  snapshot,
  startPaymentResource,
  write,
  writeHeaders,
  type Harness,
} from './support';

describe('idempotency (docs/contract.md, docs/contract.md) and int64 tokens', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  async function freshPayout(balance = 100_000, amount = 1_000) {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: balance,
    });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: amount });
    return { accountId, payoutId };
  }

  it('replays the stored status and body for the same key, token and body, and writes nothing new', async () => {
    const { payoutId } = await freshPayout();
    const first = await write(h.base, 'claim', payoutId, 10n, bodies.claim());
    expect(first.status).toBe(200);
    const before = await snapshot(h.dbUrl);
    const again = await write(h.base, 'claim', payoutId, 10n, bodies.claim());
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await snapshot(h.dbUrl)).toEqual(before);
    // The same for every later step of the grant, including the post and its entry ids.
    await write(h.base, 'rail-outcome', payoutId, 10n, bodies.submitted());
    await write(h.base, 'rail-outcome', payoutId, 10n, bodies.acked());
    const posted = await write(h.base, 'post', payoutId, 10n, bodies.post());
    const replayed = await write(h.base, 'post', payoutId, 10n, { ...bodies.post() });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual(posted.body);
    const submittedAgain = await write(h.base, 'rail-outcome', payoutId, 10n, bodies.submitted());
    expect(submittedAgain.status).toBe(200);
    expect(submittedAgain.body.state).toBe('RAIL_SUBMITTED'); // the original answer, not today's state
  });

  it('key order inside the body does not make a different request', async () => {
    const { payoutId } = await freshPayout();
    await write(h.base, 'claim', payoutId, 11n, bodies.claim());
    await write(h.base, 'rail-outcome', payoutId, 11n, bodies.submitted());
    const a = await write(h.base, 'rail-outcome', payoutId, 11n, {
      outcome: 'ACKED',
      submissionId: '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13',
      railReference: 'r-1',
    });
    const b = await write(h.base, 'rail-outcome', payoutId, 11n, {
      railReference: 'r-1',
      submissionId: '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13',
      outcome: 'ACKED',
    });
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
  });

  it('same scope with a different body is 422 IDEMPOTENCY_CONFLICT and changes nothing', async () => {
    const { payoutId } = await freshPayout();
    await write(h.base, 'claim', payoutId, 12n, bodies.claim());
    await write(h.base, 'rail-outcome', payoutId, 12n, bodies.submitted());
    await write(h.base, 'rail-outcome', payoutId, 12n, bodies.acked());
    await write(h.base, 'post', payoutId, 12n, bodies.post());
    const before = await snapshot(h.dbUrl);
    const conflict = await write(h.base, 'post', payoutId, 12n, {
      ...bodies.post(),
      railReference: 'a-different-reference',
    });
    expect(conflict.status).toBe(422);
    expect(conflict.body).toEqual({
      code: 'IDEMPOTENCY_CONFLICT',
      message: expect.any(String),
      retrySafe: false,
      details: { operation: 'post', idempotencyKey: keyFor(payoutId) },
      traceId: expect.any(String),
    });
    const claimConflict = await write(h.base, 'claim', payoutId, 12n, bodies.claim('CLAIMED'));
    expect(claimConflict.status).toBe(422);
    expect(await snapshot(h.dbUrl)).toEqual(before);
  });

  it('a later holder re-claims with the same key under a newer token (a new scope)', async () => {
    const { payoutId } = await freshPayout();
    await write(h.base, 'claim', payoutId, 13n, bodies.claim());
    const reclaim = await write(h.base, 'claim', payoutId, 14n, bodies.claim('CLAIMED'));
    expect(reclaim.status).toBe(200);
    expect(reclaim.body).toMatchObject({ claimToken: '14', attemptCount: 2 });
  });

  it('concurrent duplicates execute once and all get the same answer', async () => {
    for (const op of ['claim', 'post'] as const) {
      const { accountId, payoutId } = await freshPayout();
      if (op === 'post') {
        await write(h.base, 'claim', payoutId, 15n, bodies.claim());
        await write(h.base, 'rail-outcome', payoutId, 15n, bodies.submitted());
        await write(h.base, 'rail-outcome', payoutId, 15n, bodies.acked());
      }
      const body = op === 'claim' ? bodies.claim() : bodies.post();
      const results = await Promise.all(
        Array.from({ length: 12 }, () => write(h.base, op, payoutId, 15n, body)),
      );
      expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
      for (const r of results) expect(r.body).toEqual(results[0].body);
      await withClient(h.dbUrl, async (c) => {
        const t = await c.query(
          `SELECT count(*)::int AS n FROM payout_transition WHERE payout_id = $1 AND event = $2`,
          [payoutId, op === 'claim' ? 'CLAIM' : 'POST'],
        );
        expect(t.rows[0].n).toBe(1);
        const e = await c.query(
          `SELECT count(*)::int AS n FROM ledger_entry WHERE payout_id = $1`,
          [payoutId],
        );
        expect(e.rows[0].n).toBe(op === 'post' ? 2 : 0);
      });
      const p5 = (await http('GET', `${h.base}/v1/accounts/${accountId}`)).body;
      expect(p5.balanceMinor).toBe(op === 'post' ? 99_000 : 100_000);
      expect(p5.ledgerSumMinor).toBe(p5.balanceMinor);
    }
  });

  it('answers and replays P6 with the submission id as stored (lower case), whatever case it came in', async () => {
    const { payoutId } = await freshPayout();
    await write(h.base, 'claim', payoutId, 17n, bodies.claim());
    await write(h.base, 'rail-outcome', payoutId, 17n, bodies.submitted());
    const upper = bodies.acked(SUBMISSION_ID.toUpperCase());
    const first = await write(h.base, 'rail-outcome', payoutId, 17n, upper);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ state: 'RAIL_ACKED', submissionId: SUBMISSION_ID });
    const again = await write(h.base, 'rail-outcome', payoutId, 17n, upper);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('stores INSUFFICIENT_FUNDS (it committed) and replays it as 422', async () => {
    const { payoutId } = await freshPayout(10, 1_000);
    const first = await write(h.base, 'claim', payoutId, 16n, bodies.claim());
    expect(first.status).toBe(422);
    const again = await write(h.base, 'claim', payoutId, 16n, bodies.claim());
    expect(again.status).toBe(422);
    expect({ ...again.body, traceId: 'x' }).toEqual({ ...first.body, traceId: 'x' });
  });

  it('does not store rejections: a fenced or refused request can be re-evaluated', async () => {
    const { payoutId } = await freshPayout();
    const refused = await write(h.base, 'post', payoutId, 17n, bodies.post());
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('PAYOUT_NOT_CLAIMABLE');
    await withClient(h.dbUrl, async (c) => {
      const r = await c.query(
        `SELECT count(*)::int AS n FROM idempotency_record WHERE payout_id = $1`,
        [payoutId],
      );
      expect(r.rows[0].n).toBe(0);
    });
  });

  it('a token of 2^53+1 round-trips without losing a digit', async () => {
    const big = 2n ** 53n + 1n; // 9007199254740993: a JS number would read it as ...992
    const { accountId, payoutId } = await freshPayout();
    const claim = await write(h.base, 'claim', payoutId, big, bodies.claim());
    expect(claim.status).toBe(200);
    expect(claim.body).toMatchObject({
      claimToken: '9007199254740993',
      accountFence: '9007199254740993',
    });
    expect(claim.text).toContain('"claimToken":"9007199254740993"');
    const p5 = (await http('GET', `${h.base}/v1/accounts/${accountId}`)).body;
    expect(p5.fence).toBe('9007199254740993');
    await withClient(h.dbUrl, async (c) => {
      const r = await c.query(`SELECT fence::text FROM account WHERE account_id = $1`, [accountId]);
      expect(r.rows[0].fence).toBe('9007199254740993');
    });
    // 2^53 (what a float would have made of it) is below the fence now.
    const lower = await write(h.base, 'claim', payoutId, 2n ** 53n, bodies.claim('CLAIMED'));
    expect(lower.status).toBe(409);
    expect(lower.body.details).toMatchObject({
      presentedToken: '9007199254740992',
      highestToken: '9007199254740993',
    });
    const higher = await write(h.base, 'claim', payoutId, big + 1n, bodies.claim('CLAIMED'));
    expect(higher.body).toMatchObject({ claimToken: '9007199254740994' });
    const max = 2n ** 63n - 1n;
    const top = await http('POST', `${h.base}/v1/payouts/${payoutId}/claim`, {
      headers: writeHeaders(max, 'w', keyFor(payoutId)),
      body: bodies.claim('CLAIMED'),
    });
    expect(top.body).toMatchObject({ claimToken: max.toString() });
  });
});
