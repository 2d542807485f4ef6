import { setTimeout as sleep } from 'node:timers/promises';
import { http, withClient, type HttpResult, seriesValue, scrapeMetrics } from '@dlock/testing';
import {
  accountRow,
  lockWaiter,
  payoutRows,
  statementsDuring,
  withAccountLocked,
  fencedOutEnvelope,
} from './fast-path-support';
import {
  OWNER_A,
  OWNER_B,
  bodies,
  keyFor,
  snapshot,
  startPaymentResource,
  write,
  writeHeaders,
  type Harness,
} from './support';

/**
 * P6's one-statement fast path (docs/payment-resource.md, "The one-statement
 * fast path"): a plain read, then one statement in autocommit that writes the
 * fence advance, the transition, its audit row and the answer, or nothing.
 */

describe('P6 rail-outcome: the one-statement fast path', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  async function claimed(token: bigint, owner = OWNER_A) {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 1_000_000,
    });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    const claim = await write(h.base, 'claim', payoutId, token, bodies.claim(), { owner });
    expect(claim.status).toBe(200);
    return { accountId, payoutId };
  }

  it('records SUBMITTED and ACKED in one statement each after the claim, no read, no transaction', async () => {
    const warm = await claimed(5n);
    await write(h.base, 'rail-outcome', warm.payoutId, 5n, bodies.submitted());
    const { accountId, payoutId } = await claimed(10n);
    const submitted = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'rail-outcome', payoutId, 10n, bodies.submitted()),
    );
    expect(submitted.result.status).toBe(200);
    expect(submitted.result.body).toMatchObject({
      payoutId,
      state: 'RAIL_SUBMITTED',
      previousState: 'CLAIMED',
      outcome: 'SUBMITTED',
      railInstruction: expect.any(String),
      tokenStamp: '10',
      accountFence: '10',
    });
    // The rows the claim's statement returned stand in for the read (SeenPayouts).
    expect(submitted.statements).toHaveLength(1);
    expect(submitted.statements[0]).toMatch(/^WITH fenced AS MATERIALIZED/);
    const acked = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'rail-outcome', payoutId, 10n, bodies.acked()),
    );
    expect(acked.result.status).toBe(200);
    expect(acked.statements).toHaveLength(1);
    // Everything landed: fence, transition rows and answers, as the transactional path writes them.
    expect(await accountRow(h.dbUrl, accountId)).toMatchObject({
      fence: '10',
      fence_payout_id: payoutId,
    });
    const rows = await payoutRows(h.dbUrl, payoutId);
    expect(rows.transitions.map((t) => [t.from_state, t.to_state, t.token])).toEqual([
      ['PENDING', 'CLAIMED', '10'],
      ['CLAIMED', 'RAIL_SUBMITTED', '10'],
      ['RAIL_SUBMITTED', 'RAIL_ACKED', '10'],
    ]);
    expect(rows.answers).toHaveLength(3);
    // The replay comes from the stored answer.
    const replay = await write(h.base, 'rail-outcome', payoutId, 10n, bodies.acked());
    expect(replay.body).toEqual(acked.result.body);
  });

  it('a caller deadline tighter than the pool statement timeout keeps the transactional path', async () => {
    const { payoutId } = await claimed(20n);
    const tight = await statementsDuring(h.dbUrl, () =>
      http('POST', `${h.base}/v1/payouts/${payoutId}/rail-outcome`, {
        headers: {
          ...writeHeaders(20n, OWNER_A, keyFor(payoutId)),
          'x-request-deadline-ms': '1500',
        },
        body: bodies.submitted(),
      }),
    );
    expect(tight.result.status).toBe(200);
    expect(tight.statements).toHaveLength(5);
    expect(tight.statements[0]).toBe('START TRANSACTION');
    expect(tight.statements[1]).toMatch(/set_config\('statement_timeout'/);
    expect(tight.statements[4]).toBe('COMMIT');
  });

  it('a stale token changes nothing and answers FENCED_OUT, with its event counted', async () => {
    const { accountId, payoutId } = await claimed(30n, OWNER_B);
    const before = await snapshot(h.dbUrl);
    const metric = 'lock_fenced_out_total{resource="account"}';
    const fencedBefore = seriesValue(await scrapeMetrics(h.base), metric, 'zero');
    const res = await write(h.base, 'rail-outcome', payoutId, 29n, bodies.submitted());
    expect(res.status).toBe(409);
    expect(res.body).toEqual(fencedOutEnvelope(accountId, '29', '30'));
    expect(await snapshot(h.dbUrl)).toEqual(before);
    expect(seriesValue(await scrapeMetrics(h.base), metric, 'throw')).toBe(fencedBefore + 1);
  });

  it('a newer claim committed while the statement waits for the account: fenced out, nothing written', async () => {
    const { accountId, payoutId } = await claimed(40n);
    const other = await h.fixtures.createPayout({ accountId, amountMinor: 10 });
    const account = await accountRow(h.dbUrl, accountId);
    const payoutBefore = await payoutRows(h.dbUrl, payoutId);
    let pending!: Promise<HttpResult>;
    await withAccountLocked(
      h.dbUrl,
      accountId,
      async (holder) => {
        pending = write(h.base, 'rail-outcome', payoutId, 40n, bodies.submitted());
        // The fast statement read the payout and now waits for the account's row lock.
        expect(await lockWaiter(h.dbUrl)).toMatch(/^WITH fenced AS MATERIALIZED/);
        // What a newer holder's claim of another payout does to the account, committed first.
        await holder.query(
          `UPDATE account SET fence = 41, fence_payout_id = $2, version = version + 1
            WHERE account_id = $1`,
          [accountId, other],
        );
      },
      'COMMIT',
    );
    const res = await pending;
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      code: 'FENCED_OUT',
      details: { presentedToken: '40', highestToken: '41' },
    });
    expect(await accountRow(h.dbUrl, accountId)).toEqual({
      fence: '41',
      fence_payout_id: other,
      version: account.version + 1,
    });
    expect(await payoutRows(h.dbUrl, payoutId)).toEqual(payoutBefore);
  });

  it('a payout written by another process since this one wrote it: a read, then the statement', async () => {
    const { accountId, payoutId } = await claimed(45n);
    // What another replica's write leaves for this process to see: a new version of the row.
    await withClient(h.dbUrl, (c) =>
      c.query(`UPDATE payout SET updated_at = updated_at WHERE payout_id = $1`, [payoutId]),
    );
    const submitted = await statementsDuring(h.dbUrl, () =>
      write(h.base, 'rail-outcome', payoutId, 45n, bodies.submitted()),
    );
    expect(submitted.result.status).toBe(200);
    expect(submitted.result.body).toMatchObject({ state: 'RAIL_SUBMITTED', tokenStamp: '45' });
    // The remembered row no longer matches: that statement wrote nothing, and the read follows.
    expect(submitted.statements.map((s) => s.slice(0, 28))).toEqual([
      'WITH fenced AS MATERIALIZED ',
      expect.stringMatching(/^SELECT /),
      'WITH fenced AS MATERIALIZED ',
    ]);
    expect(await accountRow(h.dbUrl, accountId)).toMatchObject({ fence: '45' });
    const rows = await payoutRows(h.dbUrl, payoutId);
    expect(rows.transitions.map((t) => [t.from_state, t.to_state])).toEqual([
      ['PENDING', 'CLAIMED'],
      ['CLAIMED', 'RAIL_SUBMITTED'],
    ]);
    expect(rows.answers).toHaveLength(2);
  });

  it('a payout moved on while the statement waits for the account: the statement writes nothing', async () => {
    const { accountId, payoutId } = await claimed(50n);
    const account = await accountRow(h.dbUrl, accountId);
    const before = await payoutRows(h.dbUrl, payoutId);
    let pending!: Promise<HttpResult>;
    await withAccountLocked(
      h.dbUrl,
      accountId,
      async (holder) => {
        pending = write(h.base, 'rail-outcome', payoutId, 50n, bodies.submitted());
        expect(await lockWaiter(h.dbUrl)).toMatch(/^WITH fenced AS MATERIALIZED/);
        // An operator's cancel, as P7 writes it under the account's lock.
        await holder.query(
          `UPDATE payout SET state = 'ABANDONED', settled_at = clock_timestamp() WHERE payout_id = $1`,
          [payoutId],
        );
      },
      'COMMIT',
    );
    const res = await pending;
    // Answered from the payout as it is now, by the transactional path.
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      code: 'PAYOUT_NOT_CLAIMABLE',
      details: { state: 'ABANDONED', event: 'RAIL_SUBMITTED' },
    });
    expect(await accountRow(h.dbUrl, accountId)).toEqual(account);
    const after = await payoutRows(h.dbUrl, payoutId);
    expect(after.payout[0]).toMatchObject({ state: 'ABANDONED', submitted_at: null });
    expect(after.transitions).toEqual(before.transitions);
    expect(after.answers).toEqual(before.answers);
  });

  it('two identical requests at once: one transition, and the other answers the same body', async () => {
    const { accountId, payoutId } = await claimed(60n);
    const send = () => write(h.base, 'rail-outcome', payoutId, 60n, bodies.submitted());
    // Both read the payout and wait for the account: then the lock decides.
    let both!: Promise<HttpResult[]>;
    await withAccountLocked(
      h.dbUrl,
      accountId,
      async () => {
        both = Promise.all([send(), send()]);
        expect(await lockWaiter(h.dbUrl, 2)).toMatch(/^WITH fenced AS MATERIALIZED/);
      },
      'ROLLBACK',
    );
    const [a, b] = await both;
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.body).toEqual(a.body);
    const rows = await payoutRows(h.dbUrl, payoutId);
    expect(rows.transitions.map((t) => t.to_state)).toEqual(['CLAIMED', 'RAIL_SUBMITTED']);
    expect(rows.answers).toHaveLength(2);
    // Free races too, without the held lock.
    for (let round = 0; round < 5; round++) {
      const p = await claimed(BigInt(61 + round));
      const token = BigInt(61 + round);
      const results = await Promise.all(
        [0, 1, 2].map(() => write(h.base, 'rail-outcome', p.payoutId, token, bodies.submitted())),
      );
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(results[1].body).toEqual(results[0].body);
      expect(results[2].body).toEqual(results[0].body);
      const r = await payoutRows(h.dbUrl, p.payoutId);
      expect(r.transitions).toHaveLength(2);
      expect(r.answers).toHaveLength(2);
    }
  });

  it('racing newer claims on the account never leaves the fence advanced without its transition', async () => {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 1_000_000,
    });
    const start = await accountRow(h.dbUrl, accountId);
    const outcomes: HttpResult[] = [];
    let token = 100n;
    for (let round = 0; round < 15; round++) {
      const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 10 });
      const next = await h.fixtures.createPayout({ accountId, amountMinor: 10 });
      const mine = (token += 2n);
      expect((await write(h.base, 'claim', payoutId, mine, bodies.claim())).status).toBe(200);
      const [p6, claim] = await Promise.all([
        (async () => {
          if (round % 3 === 1) await sleep(round % 4);
          return write(h.base, 'rail-outcome', payoutId, mine, bodies.submitted());
        })(),
        (async () => {
          if (round % 3 === 2) await sleep(round % 4);
          return write(h.base, 'claim', next, mine + 1n, bodies.claim(), { owner: OWNER_B });
        })(),
      ]);
      expect(claim.status).toBe(200);
      expect([200, 409]).toContain(p6.status);
      const state = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body.state;
      expect(state).toBe(p6.status === 200 ? 'RAIL_SUBMITTED' : 'CLAIMED');
      if (p6.status === 409) expect(p6.body.code).toBe('FENCED_OUT');
      outcomes.push(p6);
    }
    // Every fence advance is one version step and one transition row, and the reverse.
    const transitions = await withClient(h.dbUrl, async (c) => {
      const rows = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM payout_transition t JOIN payout p USING (payout_id)
          WHERE p.account_id = $1`,
        [accountId],
      );
      return rows.rows[0].n;
    });
    const end = await accountRow(h.dbUrl, accountId);
    expect(end.version - start.version).toBe(transitions);
    expect(end.fence).toBe(String(token + 1n));
    expect(outcomes).toHaveLength(15);
  });

  it('a replay with another body is IDEMPOTENCY_CONFLICT and changes nothing', async () => {
    const { payoutId } = await claimed(70n);
    await write(h.base, 'rail-outcome', payoutId, 70n, bodies.submitted());
    expect((await write(h.base, 'rail-outcome', payoutId, 70n, bodies.acked())).status).toBe(200);
    const before = await snapshot(h.dbUrl);
    const conflict = await write(h.base, 'rail-outcome', payoutId, 70n, {
      ...bodies.acked(),
      railReference: 'another-reference',
    });
    expect(conflict.status).toBe(422);
    expect(conflict.body).toEqual({
      code: 'IDEMPOTENCY_CONFLICT',
      message: expect.any(String),
      retrySafe: false,
      details: { operation: 'rail-outcome:ACKED', idempotencyKey: keyFor(payoutId) },
      traceId: expect.any(String),
    });
    expect(await snapshot(h.dbUrl)).toEqual(before);
  });

  it('an answer scope taken meanwhile by another payout undoes the whole statement', async () => {
    // Two accounts, one token each at 80: the same (operation, key, token) for two payouts.
    const first = await claimed(80n);
    const second = await claimed(80n);
    const key = 'shared-key';
    const account = await accountRow(h.dbUrl, second.accountId);
    const before = await payoutRows(h.dbUrl, second.payoutId);
    let pending!: Promise<HttpResult>;
    await withAccountLocked(
      h.dbUrl,
      second.accountId,
      async () => {
        pending = write(h.base, 'rail-outcome', second.payoutId, 80n, bodies.submitted(), { key });
        expect(await lockWaiter(h.dbUrl)).toMatch(/^WITH fenced AS MATERIALIZED/);
        // Its snapshot has no answer under the scope; this one commits it before the insert.
        const other = await write(h.base, 'rail-outcome', first.payoutId, 80n, bodies.submitted(), {
          key,
        });
        expect(other.status).toBe(200);
      },
      'ROLLBACK',
    );
    const res = await pending;
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(await accountRow(h.dbUrl, second.accountId)).toEqual(account);
    expect(await payoutRows(h.dbUrl, second.payoutId)).toEqual(before);
  });
});

describe('PAYMENT_FENCING_ENABLED=false keeps P6 on the transactional path', () => {
  it('records the stale write in a transaction', async () => {
    const h = await startPaymentResource({ PAYMENT_FENCING_ENABLED: 'false', DLOCK_HARNESS: '1' });
    try {
      const accountId = await h.fixtures.createAccount({
        currency: 'EUR',
        openingBalanceMinor: 10_000,
      });
      const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
      expect((await write(h.base, 'claim', payoutId, 9n, bodies.claim())).status).toBe(200);
      const stale = await statementsDuring(h.dbUrl, () =>
        write(h.base, 'rail-outcome', payoutId, 5n, bodies.submitted()),
      );
      expect(stale.result.status).toBe(200);
      expect(stale.statements[0]).toBe('START TRANSACTION');
      expect(stale.statements.some((s) => s.startsWith('WITH fenced'))).toBe(false);
    } finally {
      await h.close();
    }
  });
});
