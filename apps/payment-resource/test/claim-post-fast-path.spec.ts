import { setTimeout as sleep } from 'node:timers/promises';
import { http, withClient, type HttpResult, seriesValue, scrapeMetrics } from '@dlock/testing';
import {
  OWNER_A,
  OWNER_B,
  bodies,
  keyFor,
  ledgerInvariants,
  snapshot,
  startPaymentResource,
  write,
  writeHeaders,
  type Harness,
} from './support';
import {
  accountRow,
  lockWaiter,
  payoutRows,
  statementsDuring,
  withAccountLocked,
  fencedOutEnvelope,
} from './fast-path-support';

/**
 * P2 claim and P3 post on the one-statement fast path (docs/payment-resource.md,
 * "The one-statement fast path"): a plain read, then one statement in
 * autocommit that writes the fence advance, the transition, its audit row, the
 * answer and, for a post, the ledger pair and both balances — or nothing.
 */

const FAST = /^WITH fenced AS MATERIALIZED/;

async function ledgerOf(dbUrl: string, payoutId: string) {
  return withClient(dbUrl, async (c) => {
    const rows = await c.query<{ account_id: string; amount_minor: string; fence: string }>(
      `SELECT account_id, amount_minor, fence FROM ledger_entry WHERE payout_id = $1
        ORDER BY amount_minor`,
      [payoutId],
    );
    return rows.rows;
  });
}

async function balanceOf(dbUrl: string, accountId: string): Promise<number> {
  return withClient(dbUrl, async (c) => {
    const rows = await c.query<{ b: string }>(
      `SELECT balance_minor AS b FROM account WHERE account_id = $1`,
      [accountId],
    );
    return Number(rows.rows[0].b);
  });
}

/** What a grant's claim, SUBMITTED and ACKED leave behind: a payout ready to post. */
async function acked(h: Harness, accountId: string, token: bigint, amountMinor = 1_000) {
  const payoutId = await h.fixtures.createPayout({ accountId, amountMinor });
  for (const [op, body] of [
    ['claim', bodies.claim()],
    ['rail-outcome', bodies.submitted()],
    ['rail-outcome', bodies.acked()],
  ] as const) {
    expect((await write(h.base, op, payoutId, token, body)).status).toBe(200);
  }
  return payoutId;
}

describe('P2 claim and P3 post: the one-statement fast path', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  const account = (openingBalanceMinor = 1_000_000) =>
    h.fixtures.createAccount({ currency: 'EUR', openingBalanceMinor });

  it('claims in a read and one statement, posts in one statement, no transaction', async () => {
    const accountId = await account();
    // The first post of a process creates its clearing account in a transaction.
    const warm = await acked(h, accountId, 5n);
    expect((await write(h.base, 'post', warm, 5n, bodies.post())).status).toBe(200);
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const claim = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'claim', payoutId, 10n, bodies.claim()),
    );
    expect(claim.result.status).toBe(200);
    expect(claim.result.body).toEqual({
      payoutId,
      state: 'CLAIMED',
      claimToken: '10',
      accountFence: '10',
      attemptCount: 1,
      idempotencyKey: keyFor(payoutId),
    });
    expect(claim.statements).toHaveLength(2);
    expect(claim.statements[0]).toMatch(/^SELECT /);
    expect(claim.statements[1]).toMatch(FAST);
    for (const body of [bodies.submitted(), bodies.acked()]) {
      expect((await write(h.base, 'rail-outcome', payoutId, 10n, body)).status).toBe(200);
    }
    const balance = await balanceOf(h.dbUrl, accountId);
    const before = await accountRow(h.dbUrl, accountId);
    const post = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'post', payoutId, 10n, bodies.post()),
    );
    expect(post.result.status).toBe(200);
    // The rows ACKED's statement returned stand in for the read (SeenPayouts).
    expect(post.statements).toHaveLength(1);
    expect(post.statements[0]).toMatch(FAST);
    const ledger = await ledgerOf(h.dbUrl, payoutId);
    expect(ledger.map((e) => [e.amount_minor, e.fence])).toEqual([
      ['-1000', '10'],
      ['1000', '10'],
    ]);
    expect(post.result.body).toEqual({
      payoutId,
      state: 'POSTED',
      entries: [
        {
          entryId: expect.any(String),
          accountId,
          direction: 'DEBIT',
          amountMinor: 1_000,
          fence: '10',
        },
        {
          entryId: expect.any(String),
          accountId: ledger[1].account_id,
          direction: 'CREDIT',
          amountMinor: 1_000,
          fence: '10',
        },
      ],
      balanceMinor: balance - 1_000,
    });
    expect(await balanceOf(h.dbUrl, accountId)).toBe(balance - 1_000);
    // The account's version counts the fence advance and the balance move, as the transaction does.
    expect((await accountRow(h.dbUrl, accountId)).version).toBe(before.version + 2);
    const rows = await payoutRows(h.dbUrl, payoutId);
    expect(rows.transitions.map((t) => [t.from_state, t.to_state, t.token])).toEqual([
      ['PENDING', 'CLAIMED', '10'],
      ['CLAIMED', 'RAIL_SUBMITTED', '10'],
      ['RAIL_SUBMITTED', 'RAIL_ACKED', '10'],
      ['RAIL_ACKED', 'POSTED', '10'],
    ]);
    expect(rows.answers).toHaveLength(4);
    // Replays come from the stored answers.
    expect((await write(h.base, 'claim', payoutId, 10n, bodies.claim())).body).toEqual(
      claim.result.body,
    );
    expect((await write(h.base, 'post', payoutId, 10n, bodies.post())).body).toEqual(
      post.result.body,
    );
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('a re-claim of a CLAIMED payout takes the fast path too', async () => {
    const accountId = await account();
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    expect((await write(h.base, 'claim', payoutId, 20n, bodies.claim())).status).toBe(200);
    const again = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'claim', payoutId, 21n, bodies.claim('CLAIMED'), { owner: OWNER_B }),
    );
    expect(again.result.status).toBe(200);
    expect(again.result.body).toMatchObject({ state: 'CLAIMED', attemptCount: 2 });
    expect(again.statements).toHaveLength(1);
    expect(again.statements[0]).toMatch(FAST);
  });

  it('a caller deadline tighter than the pool statement timeout keeps the transactional path', async () => {
    const accountId = await account();
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const tight = (op: 'claim' | 'post', body: object) =>
      statementsDuring(h.dbUrl, () =>
        http('POST', `${h.base}/v1/payouts/${payoutId}/${op}`, {
          headers: {
            ...writeHeaders(30n, OWNER_A, keyFor(payoutId)),
            'x-request-deadline-ms': '1500',
          },
          body,
        }),
      );
    const claim = await tight('claim', bodies.claim());
    expect(claim.result.status).toBe(200);
    expect(claim.statements).toHaveLength(6);
    expect(claim.statements[0]).toBe('START TRANSACTION');
    expect(claim.statements[5]).toBe('COMMIT');
    for (const body of [bodies.submitted(), bodies.acked()]) {
      expect((await write(h.base, 'rail-outcome', payoutId, 30n, body)).status).toBe(200);
    }
    const post = await tight('post', bodies.post());
    expect(post.result.status).toBe(200);
    expect(post.statements[0]).toBe('START TRANSACTION');
    expect(post.statements.some((s) => FAST.test(s))).toBe(false);
  });

  it('a stale claim or post changes nothing and answers FENCED_OUT, with its event counted', async () => {
    const accountId = await account();
    const posted = await acked(h, accountId, 40n);
    const pending = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const newer = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    expect(
      (await write(h.base, 'claim', newer, 41n, bodies.claim(), { owner: OWNER_B })).status,
    ).toBe(200);
    const metric = 'lock_fenced_out_total{resource="account"}';
    for (const [op, payoutId, token, body] of [
      ['claim', pending, 39n, bodies.claim()],
      ['post', posted, 40n, bodies.post()],
    ] as const) {
      const before = await snapshot(h.dbUrl);
      const fencedBefore = seriesValue(await scrapeMetrics(h.base), metric, 'zero');
      const res = await write(h.base, op, payoutId, token, body);
      expect(res.status).toBe(409);
      expect(res.body).toEqual(fencedOutEnvelope(accountId, String(token), '41'));
      // Fence, payouts, transitions, answers, ledger and balances.
      expect(await snapshot(h.dbUrl)).toEqual(before);
      expect(seriesValue(await scrapeMetrics(h.base), metric, 'throw')).toBe(fencedBefore + 1);
    }
  });

  it('insufficient funds: FAILED and 422 INSUFFICIENT_FUNDS, committed and replayed, from the transactional path', async () => {
    const accountId = await account(1_500);
    const first = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const second = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    expect((await write(h.base, 'claim', first, 50n, bodies.claim())).status).toBe(200);
    // 1 500 less the 1 000 the first claim holds: 500 left for 1 000.
    const short = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'claim', second, 51n, bodies.claim(), { owner: OWNER_B }),
    );
    expect(short.result.status).toBe(422);
    expect(short.result.body).toEqual({
      code: 'INSUFFICIENT_FUNDS',
      message: expect.any(String),
      retrySafe: false,
      details: {
        payoutId: second,
        accountId,
        state: 'FAILED',
        amountMinor: 1_000,
        availableMinor: 500,
      },
      traceId: expect.any(String),
    });
    // The fast statement found the funds short and wrote nothing; the transaction did the rest.
    expect(short.statements[1]).toMatch(FAST);
    expect(short.statements[2]).toBe('START TRANSACTION');
    expect(short.statements.at(-1)).toBe('COMMIT');
    const rows = await payoutRows(h.dbUrl, second);
    expect(rows.payout[0]).toMatchObject({ state: 'FAILED', failure_reason: 'INSUFFICIENT_FUNDS' });
    expect(rows.transitions.map((t) => [t.to_state, t.event])).toEqual([
      ['FAILED', 'CLAIM_INSUFFICIENT_FUNDS'],
    ]);
    expect(rows.answers).toHaveLength(1);
    expect(await accountRow(h.dbUrl, accountId)).toMatchObject({ fence: '51' });
    const replay = await write(h.base, 'claim', second, 51n, bodies.claim(), { owner: OWNER_B });
    expect(replay.status).toBe(422);
    expect({ ...replay.body, traceId: null }).toEqual({ ...short.result.body, traceId: null });
  });

  it('funds taken by a claim committed while the statement waits: nothing written, INSUFFICIENT_FUNDS', async () => {
    const accountId = await account(1_500);
    const other = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    let pending!: Promise<HttpResult>;
    await withAccountLocked(
      h.dbUrl,
      accountId,
      async (holder) => {
        pending = write(h.base, 'claim', payoutId, 61n, bodies.claim());
        expect(await lockWaiter(h.dbUrl)).toMatch(FAST);
        // What an older holder's claim of the other payout writes, committed first.
        await holder.query(
          `UPDATE payout SET state = 'CLAIMED', token_stamp = 60 WHERE payout_id = $1`,
          [other],
        );
        await holder.query(
          `UPDATE account SET fence = 60, fence_payout_id = $2, version = version + 1
            WHERE account_id = $1`,
          [accountId, other],
        );
      },
      'COMMIT',
    );
    const res = await pending;
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: 'INSUFFICIENT_FUNDS',
      details: { availableMinor: 500, state: 'FAILED' },
    });
    expect((await payoutRows(h.dbUrl, payoutId)).payout[0].state).toBe('FAILED');
  });

  it('an account moved while the post waits: the statement writes nothing, the read and the statement follow', async () => {
    const accountId = await account();
    const payoutId = await acked(h, accountId, 70n);
    const balance = await balanceOf(h.dbUrl, accountId);
    let pending!: Promise<HttpResult>;
    await withAccountLocked(
      h.dbUrl,
      accountId,
      async (holder) => {
        pending = statementsDuring(h.dbUrl, () =>
          write(h.base, 'post', payoutId, 70n, bodies.post()),
        ).then((r) => {
          // The remembered account no longer matches: a fresh read, and the statement on it.
          expect(r.statements).toHaveLength(3);
          expect(r.statements[0]).toMatch(FAST);
          expect(r.statements[1]).toMatch(/^SELECT /);
          expect(r.statements[2]).toMatch(FAST);
          return r.result;
        });
        expect(await lockWaiter(h.dbUrl)).toMatch(FAST);
        // A deposit of 500, as intake books it, committed first.
        await holder.query(
          `WITH g AS (SELECT gen_random_uuid() AS id)
           INSERT INTO ledger_entry
             (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
           SELECT gen_random_uuid(), g.id, l.account_id, l.amount, l.counterparty, 'DEPOSIT'
             FROM g, (VALUES ('funding-EUR', -500, $1), ($1, 500, 'funding-EUR'))
                  AS l(account_id, amount, counterparty)`,
          [accountId],
        );
        await holder.query(
          `UPDATE account SET balance_minor = balance_minor + 500, version = version + 1
            WHERE account_id = $1`,
          [accountId],
        );
        await holder.query(
          `UPDATE account SET balance_minor = balance_minor - 500, version = version + 1
            WHERE account_id = 'funding-EUR'`,
        );
      },
      'COMMIT',
    );
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.balanceMinor).toBe(balance + 500 - 1_000);
    expect(await balanceOf(h.dbUrl, accountId)).toBe(balance + 500 - 1_000);
    expect(await ledgerOf(h.dbUrl, payoutId)).toHaveLength(2);
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('identical requests at once: one transition, one ledger pair, the others replay the same body', async () => {
    const accountId = await account();
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const send = (op: 'claim' | 'post', body: object) => write(h.base, op, payoutId, 80n, body);
    // Both read the payout and wait for the account: then the lock decides.
    for (const [op, body] of [
      ['claim', bodies.claim()],
      ['post', bodies.post()],
    ] as const) {
      if (op === 'post') {
        for (const b of [bodies.submitted(), bodies.acked()]) {
          expect((await write(h.base, 'rail-outcome', payoutId, 80n, b)).status).toBe(200);
        }
      }
      let both!: Promise<HttpResult[]>;
      await withAccountLocked(
        h.dbUrl,
        accountId,
        async () => {
          both = Promise.all([send(op, body), send(op, body)]);
          expect(await lockWaiter(h.dbUrl, 2)).toMatch(FAST);
        },
        'ROLLBACK',
      );
      const [a, b] = await both;
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(b.body).toEqual(a.body);
    }
    const rows = await payoutRows(h.dbUrl, payoutId);
    expect(rows.transitions.map((t) => t.to_state)).toEqual([
      'CLAIMED',
      'RAIL_SUBMITTED',
      'RAIL_ACKED',
      'POSTED',
    ]);
    expect(await ledgerOf(h.dbUrl, payoutId)).toHaveLength(2);
    // Free races too, without the held lock.
    for (let round = 0; round < 4; round++) {
      const token = BigInt(90 + round);
      const p = await h.fixtures.createPayout({ accountId, amountMinor: 100 });
      const claims = await Promise.all(
        [0, 1, 2].map(() => write(h.base, 'claim', p, token, bodies.claim())),
      );
      expect(claims.map((r) => r.status)).toEqual([200, 200, 200]);
      for (const b of [bodies.submitted(), bodies.acked()]) {
        expect((await write(h.base, 'rail-outcome', p, token, b)).status).toBe(200);
      }
      const posts = await Promise.all(
        [0, 1, 2].map(() => write(h.base, 'post', p, token, bodies.post())),
      );
      expect(posts.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(new Set(posts.map((r) => JSON.stringify(r.body))).size).toBe(1);
      expect(new Set(claims.map((r) => JSON.stringify(r.body))).size).toBe(1);
      expect(await ledgerOf(h.dbUrl, p)).toHaveLength(2);
      expect((await payoutRows(h.dbUrl, p)).transitions).toHaveLength(4);
    }
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('racing writers on one account (newer claims, abandons) never split a write', async () => {
    const accountId = await account();
    const start = await accountRow(h.dbUrl, accountId);
    let token = 200n;
    for (let round = 0; round < 12; round++) {
      const mine = (token += 2n);
      const payoutId = await acked(h, accountId, mine, 100);
      const next = await h.fixtures.createPayout({ accountId, amountMinor: 100 });
      const doomed = await h.fixtures.createPayout({ accountId, amountMinor: 100 });
      const delayed = async <T>(ms: number, fn: () => Promise<T>) => {
        if (ms > 0) await sleep(ms);
        return fn();
      };
      const [post, claim, abandon] = await Promise.all([
        delayed(round % 3 === 1 ? round % 4 : 0, () =>
          write(h.base, 'post', payoutId, mine, bodies.post()),
        ),
        delayed(round % 3 === 2 ? round % 4 : 0, () =>
          write(h.base, 'claim', next, mine + 1n, bodies.claim(), { owner: OWNER_B }),
        ),
        write(h.base, 'abandon', doomed, mine, bodies.abandon()),
      ]);
      expect(claim.status).toBe(200);
      expect(abandon.status).toBe(200);
      expect([200, 409]).toContain(post.status);
      if (post.status === 409) expect(post.body.code).toBe('FENCED_OUT');
      const state = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body.state;
      expect(state).toBe(post.status === 200 ? 'POSTED' : 'RAIL_ACKED');
      expect(await ledgerOf(h.dbUrl, payoutId)).toHaveLength(post.status === 200 ? 2 : 0);
    }
    // Every version step is a fence advance with its transition, or a post's balance move with its legs.
    const counts = await withClient(h.dbUrl, async (c) => {
      const rows = await c.query<{ fenced: number; posted: number; legs: number }>(
        `SELECT (SELECT count(*)::int FROM payout_transition t JOIN payout p USING (payout_id)
                  WHERE p.account_id = $1 AND t.token IS NOT NULL) AS fenced,
                (SELECT count(*)::int FROM payout_transition t JOIN payout p USING (payout_id)
                  WHERE p.account_id = $1 AND t.to_state = 'POSTED') AS posted,
                (SELECT count(*)::int FROM ledger_entry
                  WHERE account_id = $1 AND kind = 'PAYOUT') AS legs`,
        [accountId],
      );
      return rows.rows[0];
    });
    const end = await accountRow(h.dbUrl, accountId);
    expect(end.version - start.version).toBe(counts.fenced + counts.posted);
    expect(counts.legs).toBe(counts.posted);
    expect(end.fence).toBe(String(token + 1n));
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });

  it('posts of many accounts on the one clearing row at once, fast and in transactions: no deadlock', async () => {
    const lanes = await Promise.all(
      [0, 1, 2, 3, 4, 5, 6, 7].map(async () => {
        const accountId = await account();
        const payoutId = await acked(h, accountId, 300n);
        const next = await h.fixtures.createPayout({ accountId, amountMinor: 100 });
        return { payoutId, next };
      }),
    );
    const post = (payoutId: string, tight: boolean) =>
      http('POST', `${h.base}/v1/payouts/${payoutId}/post`, {
        headers: {
          ...writeHeaders(300n, OWNER_A, keyFor(payoutId)),
          // A tight deadline keeps a post on the transactional path.
          ...(tight ? { 'x-request-deadline-ms': '1500' } : {}),
        },
        body: bodies.post(),
      });
    // Every post takes clearing-EUR last; a newer claim races each on its account.
    const results = await Promise.all(
      lanes.map(({ payoutId, next }, i) =>
        Promise.all([
          post(payoutId, i % 3 === 0),
          write(h.base, 'claim', next, 301n, bodies.claim(), { owner: OWNER_B }),
        ]),
      ),
    );
    for (const [i, [posted, claimed]] of results.entries()) {
      // Never a 503: a post lands, or the newer claim fenced it out first.
      expect([200, 409]).toContain(posted.status);
      if (posted.status === 409) expect(posted.body.code).toBe('FENCED_OUT');
      expect(claimed.status).toBe(200);
      const legs = await ledgerOf(h.dbUrl, lanes[i].payoutId);
      expect(legs).toHaveLength(posted.status === 200 ? 2 : 0);
    }
    expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
  });
});

describe('PAYMENT_FENCING_ENABLED=false keeps P2 and P3 on the transactional path', () => {
  it('claims and posts in a transaction', async () => {
    const h = await startPaymentResource({ PAYMENT_FENCING_ENABLED: 'false', DLOCK_HARNESS: '1' });
    try {
      const accountId = await h.fixtures.createAccount({
        currency: 'EUR',
        openingBalanceMinor: 10_000,
      });
      const warm = await acked(h, accountId, 5n);
      expect((await write(h.base, 'post', warm, 5n, bodies.post())).status).toBe(200);
      const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
      const claim = await statementsDuring(h.dbUrl, () =>
        write(h.base, 'claim', payoutId, 9n, bodies.claim()),
      );
      expect(claim.result.status).toBe(200);
      expect(claim.statements[0]).toBe('START TRANSACTION');
      for (const body of [bodies.submitted(), bodies.acked()]) {
        expect((await write(h.base, 'rail-outcome', payoutId, 9n, body)).status).toBe(200);
      }
      const post = await statementsDuring(h.dbUrl, () =>
        write(h.base, 'post', payoutId, 9n, bodies.post()),
      );
      expect(post.result.status).toBe(200);
      expect(post.statements[0]).toBe('START TRANSACTION');
      expect(post.statements.some((s) => FAST.test(s))).toBe(false);
    } finally {
      await h.close();
    }
  });
});
