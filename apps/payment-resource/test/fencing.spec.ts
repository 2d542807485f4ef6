import { setTimeout as sleep } from 'node:timers/promises';
import { http, withClient, type HttpResult, seriesValue, scrapeMetrics } from '@dlock/testing';
import {
  OWNER_A,
  OWNER_B,
  SUBMISSION_ID,
  bodies,
  keyFor,
  ledgerInvariants,
  snapshot,
  startPaymentResource,
  write,
  type Harness,
} from './support';

const FENCED = (presented: bigint, highest: bigint, accountId: string, ownerId: string) => ({
  code: 'FENCED_OUT',
  message: expect.any(String),
  retrySafe: false,
  details: {
    presentedToken: presented.toString(),
    highestToken: highest.toString(),
    resourceType: 'account',
    resourceId: accountId,
    ownerId,
  },
  traceId: expect.any(String),
});

describe('fence point (a): the conditional fence advance', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  async function freshPayout(balance = 1_000_000, amount = 1_000) {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: balance,
    });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: amount });
    return { accountId, payoutId };
  }

  it('fences out a stale token with the full FENCED_OUT body, changes nothing, and counts it', async () => {
    const { accountId, payoutId } = await freshPayout();
    expect(
      (await write(h.base, 'claim', payoutId, 20n, bodies.claim(), { owner: OWNER_B })).status,
    ).toBe(200);
    const before = await snapshot(h.dbUrl);
    const fencedBefore = seriesValue(
      await scrapeMetrics(h.base),
      'lock_fenced_out_total{resource="account"}',
      'zero',
    );
    for (const [op, body] of [
      ['claim', bodies.claim('CLAIMED')],
      ['rail-outcome', bodies.submitted()],
      ['post', bodies.post()],
      ['resolve', bodies.resolveAcked()],
    ] as const) {
      const res = await write(h.base, op, payoutId, 19n, body, { key: `stale-${op}` });
      expect(res.status).toBe(409);
      expect(res.body).toEqual(FENCED(19n, 20n, accountId, OWNER_A));
    }
    expect(await snapshot(h.dbUrl)).toEqual(before);
    expect(
      seriesValue(
        await scrapeMetrics(h.base),
        'lock_fenced_out_total{resource="account"}',
        'throw',
      ),
    ).toBe(fencedBefore + 4);
  });

  it('is strict: an equal token cannot claim, and cannot touch a payout its grant did not open', async () => {
    const { accountId, payoutId } = await freshPayout();
    const other = await h.fixtures.createPayout({ accountId, amountMinor: 10 });
    expect((await write(h.base, 'claim', payoutId, 30n, bodies.claim())).status).toBe(200);
    const before = await snapshot(h.dbUrl);
    // Same token, new key: a second claim is a second takeover, not a continuation.
    const reclaim = await write(h.base, 'claim', payoutId, 30n, bodies.claim('CLAIMED'), {
      key: 'another-key',
    });
    expect(reclaim.body).toEqual(FENCED(30n, 30n, accountId, OWNER_A));
    const claimOther = await write(h.base, 'claim', other, 30n, bodies.claim());
    expect(claimOther.body).toEqual(FENCED(30n, 30n, accountId, OWNER_A));
    const touchOther = await write(h.base, 'rail-outcome', other, 30n, bodies.submitted());
    expect(touchOther.body).toEqual(FENCED(30n, 30n, accountId, OWNER_A));
    expect(await snapshot(h.dbUrl)).toEqual(before);
    // The grant continues its own payout to the end.
    expect((await write(h.base, 'rail-outcome', payoutId, 30n, bodies.submitted())).status).toBe(
      200,
    );
    expect((await write(h.base, 'rail-outcome', payoutId, 30n, bodies.acked())).status).toBe(200);
    expect((await write(h.base, 'post', payoutId, 30n, bodies.post())).status).toBe(200);
  });

  it('a later holder takes over a claimed payout and every write of the earlier one is fenced', async () => {
    const { accountId, payoutId } = await freshPayout();
    expect((await write(h.base, 'claim', payoutId, 40n, bodies.claim())).status).toBe(200);
    const takeover = await write(h.base, 'claim', payoutId, 41n, bodies.claim('CLAIMED'), {
      owner: OWNER_B,
    });
    expect(takeover.status).toBe(200);
    expect(takeover.body).toEqual({
      payoutId,
      state: 'CLAIMED',
      claimToken: '41',
      accountFence: '41',
      attemptCount: 2,
      idempotencyKey: keyFor(payoutId),
    });
    const stale = await write(h.base, 'rail-outcome', payoutId, 40n, bodies.submitted());
    expect(stale.body).toEqual(FENCED(40n, 41n, accountId, OWNER_A));
    const p4 = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
    expect(p4).toMatchObject({ state: 'CLAIMED', claimedBy: OWNER_B, tokenStamp: '41' });
  });

  it('posts both legs with the token, and the ledger is append-only', async () => {
    const { accountId, payoutId } = await freshPayout(10_000, 2_500);
    await write(h.base, 'claim', payoutId, 50n, bodies.claim());
    await write(h.base, 'rail-outcome', payoutId, 50n, bodies.submitted());
    await write(h.base, 'rail-outcome', payoutId, 50n, bodies.acked());
    const posted = await write(h.base, 'post', payoutId, 50n, bodies.post());
    expect(posted.status).toBe(200);
    expect(posted.body).toEqual({
      payoutId,
      state: 'POSTED',
      entries: [
        {
          entryId: expect.any(String),
          accountId,
          direction: 'DEBIT',
          amountMinor: 2_500,
          fence: '50',
        },
        {
          entryId: expect.any(String),
          accountId: 'clearing-EUR',
          direction: 'CREDIT',
          amountMinor: 2_500,
          fence: '50',
        },
      ],
      balanceMinor: 7_500,
    });
    const p5 = await http('GET', `${h.base}/v1/accounts/${accountId}`);
    expect(p5.body).toEqual({
      accountId,
      kind: 'CUSTOMER',
      currency: 'EUR',
      balanceMinor: 7_500,
      fence: '50',
      version: expect.any(Number),
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      ledgerSumMinor: 7_500,
    });
    const p4 = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
    expect(p4.submissions).toEqual([
      expect.objectContaining({ outcome: 'SUBMITTED', submissionId: null, fencingToken: '50' }),
      expect.objectContaining({
        outcome: 'ACKED',
        submissionId: SUBMISSION_ID,
        railReference: 'rail-ref-1',
        fencingToken: '50',
        ownerId: OWNER_A,
      }),
    ]);
    await withClient(h.dbUrl, async (c) => {
      const rows = await c.query(`SELECT fence FROM ledger_entry WHERE payout_id = $1`, [payoutId]);
      expect(rows.rows).toEqual([{ fence: '50' }, { fence: '50' }]);
      await expect(
        c.query(`UPDATE ledger_entry SET amount_minor = 1 WHERE payout_id = $1`, [payoutId]),
      ).rejects.toThrow(/append-only/);
      await expect(
        c.query(`DELETE FROM ledger_entry WHERE payout_id = $1`, [payoutId]),
      ).rejects.toThrow(/append-only/);
      await expect(
        c.query(`UPDATE account SET fence = 1 WHERE account_id = $1`, [accountId]),
      ).rejects.toThrow(/fence would decrease/);
    });
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('T1 < T2 racing claim/post for many rounds: T2 wins, T1 is fenced after it, the ledger balances', async () => {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 1_000_000,
    });
    const ROUNDS = 25;
    let base = 1_000n;
    let roundsT1Fenced = 0;
    let roundsT1Posted = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 100 + round });
      const t1 = (base += 10n);
      const t2 = (base += 10n);
      // Each worker logs every write: when it started, when it ended, how it came out.
      type Entry = { token: bigint; op: string; start: number; end: number; res: HttpResult };
      const journal: Entry[] = [];
      const call = async (token: bigint, op: 'claim' | 'rail-outcome' | 'post', body: unknown) => {
        const start = performance.now();
        const res = await write(h.base, op, payoutId, token, body, {
          owner: token === t1 ? OWNER_A : OWNER_B,
        });
        journal.push({ token, op, start, end: performance.now(), res });
        return res;
      };
      const steps: [op: 'rail-outcome' | 'post', body: unknown, from: string][] = [
        ['rail-outcome', bodies.submitted(), 'CLAIMED'],
        ['rail-outcome', bodies.acked(), 'RAIL_SUBMITTED'],
        ['post', bodies.post(), 'RAIL_ACKED'],
      ];
      // Even rounds are choreographed so T2 takes over between T1's claim and its next
      // write; odd rounds are a free race with varied start offsets.
      const choreographed = round % 2 === 0;
      let t1Claimed!: () => void;
      const t1ClaimedP = new Promise<void>((r) => (t1Claimed = r));
      let t2Wrote!: () => void;
      const t2WroteP = new Promise<void>((r) => (t2Wrote = r));
      const worker1 = async () => {
        try {
          if (!choreographed && round % 3 === 0) await sleep(3);
          if ((await call(t1, 'claim', bodies.claim('PENDING'))).status !== 200) return;
        } finally {
          t1Claimed();
        }
        if (choreographed) await t2WroteP;
        for (const [op, body] of steps) {
          if ((await call(t1, op, body)).status !== 200) return;
        }
      };
      // T2 recovers by state, as a later holder does.
      const worker2 = async () => {
        try {
          if (choreographed) await t1ClaimedP;
          else await sleep((round % 5) * 4);
          let res = await call(t2, 'claim', bodies.claim('PENDING'));
          if (res.status === 409 && res.body.details?.state === 'CLAIMED') {
            res = await call(t2, 'claim', bodies.claim('CLAIMED'));
            if (res.status !== 200) return;
          }
          t2Wrote();
          const state: string =
            res.status === 200
              ? 'CLAIMED'
              : ((res.body.details?.state as string | undefined) ?? '');
          let started = false;
          for (const [op, body, from] of steps) {
            if (!started && from !== state) continue;
            started = true;
            if ((await call(t2, op, body)).status !== 200) return;
          }
        } finally {
          t2Wrote();
        }
      };
      await Promise.all([worker1(), worker2()]);

      const t2Success = journal.filter((e) => e.token === t2 && e.res.status === 200);
      const firstT2 = Math.min(...t2Success.map((e) => e.end));
      for (const e of journal.filter((x) => x.token === t1 && x.start > firstT2)) {
        expect(e.res.status).toBe(409);
        expect(e.res.body).toEqual(FENCED(t1, t2, accountId, OWNER_A));
      }
      // Nothing T1 wrote succeeded after T2's first successful write had finished.
      for (const e of journal.filter((x) => x.token === t1 && x.res.status === 200)) {
        expect(e.start).toBeLessThan(firstT2 === Infinity ? Number.MAX_VALUE : firstT2);
      }
      if (journal.some((e) => e.token === t1 && e.res.body?.code === 'FENCED_OUT'))
        roundsT1Fenced++;
      const p4 = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
      expect(p4.state).toBe('POSTED');
      // Exactly one claim of the PENDING payout won; exactly one worker posted.
      const pendingClaims = journal.filter(
        (e) => e.op === 'claim' && e.res.status === 200 && e.res.body.attemptCount === 1,
      );
      expect(pendingClaims).toHaveLength(1);
      const posts = journal.filter((e) => e.op === 'post' && e.res.status === 200);
      expect(posts).toHaveLength(1);
      expect(p4.tokenStamp).toBe(String(posts[0].token));
      if (posts[0].token === t1) roundsT1Posted++;
      await withClient(h.dbUrl, async (c) => {
        const rows = await c.query(`SELECT fence FROM ledger_entry WHERE payout_id = $1`, [
          payoutId,
        ]);
        expect(rows.rows).toEqual([
          { fence: String(posts[0].token) },
          { fence: String(posts[0].token) },
        ]);
      });
    }
    // Every choreographed round cut the stale holder off mid-flight.
    expect(roundsT1Fenced).toBeGreaterThanOrEqual(Math.ceil(ROUNDS / 2));
    expect(roundsT1Fenced + roundsT1Posted).toBeGreaterThanOrEqual(ROUNDS);
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
    const p5 = (await http('GET', `${h.base}/v1/accounts/${accountId}`)).body;
    const spent = Array.from({ length: ROUNDS }, (_, r) => 100 + r).reduce((a, b) => a + b, 0);
    expect(p5.balanceMinor).toBe(1_000_000 - spent);
    expect(p5.ledgerSumMinor).toBe(p5.balanceMinor);
  });

  it('INSUFFICIENT_FUNDS fails the payout with the fence advanced, and nothing reaches the rail path', async () => {
    const { accountId, payoutId } = await freshPayout(500, 1_000);
    const res = await write(h.base, 'claim', payoutId, 60n, bodies.claim());
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      code: 'INSUFFICIENT_FUNDS',
      message: expect.any(String),
      retrySafe: false,
      details: { payoutId, accountId, state: 'FAILED', amountMinor: 1_000, availableMinor: 500 },
      traceId: expect.any(String),
    });
    const p4 = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
    expect(p4).toMatchObject({
      state: 'FAILED',
      failureReason: 'INSUFFICIENT_FUNDS',
      tokenStamp: '60',
    });
    expect((await http('GET', `${h.base}/v1/accounts/${accountId}`)).body.fence).toBe('60');
    const submit = await write(h.base, 'rail-outcome', payoutId, 60n, bodies.submitted());
    expect(submit.status).toBe(409);
    expect(submit.body.code).toBe('PAYOUT_NOT_CLAIMABLE');
  });

  it('counts funds promised to in-flight payouts of the same account', async () => {
    const { accountId, payoutId } = await freshPayout(1_500, 1_000);
    const second = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    expect((await write(h.base, 'claim', payoutId, 70n, bodies.claim())).status).toBe(200);
    const res = await write(h.base, 'claim', second, 71n, bodies.claim());
    expect(res.status).toBe(422);
    expect(res.body.details).toMatchObject({ availableMinor: 500 });
  });
});

describe('PAYMENT_FENCING_ENABLED=false (harness negative control)', () => {
  it('lets a stale holder corrupt the payout, which is what the fence prevents', async () => {
    const h = await startPaymentResource({ PAYMENT_FENCING_ENABLED: 'false', DLOCK_HARNESS: '1' });
    try {
      const accountId = await h.fixtures.createAccount({
        currency: 'EUR',
        openingBalanceMinor: 10_000,
      });
      const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
      expect(
        (await write(h.base, 'claim', payoutId, 9n, bodies.claim(), { owner: OWNER_B })).status,
      ).toBe(200);
      // Token 5 < fence 9: admitted, because the guard is off.
      const stale = await write(h.base, 'rail-outcome', payoutId, 5n, bodies.submitted());
      expect(stale.status).toBe(200);
      const p5 = (await http('GET', `${h.base}/v1/accounts/${accountId}`)).body;
      expect(p5.fence).toBe('9'); // never goes backwards, even unguarded
      expect(
        seriesValue(
          await scrapeMetrics(h.base),
          'lock_token_regression_total{guard="payment-resource"}',
          'throw',
        ),
      ).toBe(1);
    } finally {
      await h.close();
    }
  });
});
