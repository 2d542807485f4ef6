import { http, withClient } from '@dlock/testing';
import {
  bodies,
  keyFor,
  snapshot,
  startPaymentResource,
  write,
  writeHeaders,
  type Harness,
} from './support';

/** The fence advance would wait this long for the held row lock without the caller's budget. */
const STATEMENT_TIMEOUT_MS = 5_000;

const UNAVAILABLE = {
  code: 'UNAVAILABLE',
  message: expect.any(String),
  retrySafe: true,
  traceId: expect.any(String),
};

describe("the caller's deadline (X-Request-Deadline-Ms) bounds a fenced write", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource({
      PAYDB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      PAYMENT_REQUEST_BUDGET_MS: '6000',
    });
  });
  afterAll(() => h.close());

  async function freshPayout() {
    const accountId = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: 1_000_000,
    });
    const payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
    return { accountId, payoutId };
  }

  function claim(payoutId: string, deadline: string) {
    return http('POST', `${h.base}/v1/payouts/${payoutId}/claim`, {
      headers: {
        ...writeHeaders(10n, undefined, keyFor(payoutId)),
        'x-request-deadline-ms': deadline,
      },
      body: bodies.claim(),
    });
  }

  it('a write stuck behind a row lock answers 503 retry-safe inside a 500 ms budget, with nothing committed', async () => {
    const { accountId, payoutId } = await freshPayout();
    const before = await snapshot(h.dbUrl);
    const answer = await withClient(h.dbUrl, async (holder) => {
      // Another transaction holds the account's row (a slow paydb, as the write sees it).
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM account WHERE account_id = $1 FOR UPDATE', [accountId]);
      try {
        const started = performance.now();
        const res = await claim(payoutId, '500');
        return { res, elapsedMs: performance.now() - started };
      } finally {
        await holder.query('ROLLBACK');
      }
    });
    expect(answer.res.status).toBe(503);
    expect(answer.res.body).toEqual(UNAVAILABLE);
    // Well inside the statement timeout: the budget, not the pool's limit, ended the wait.
    expect(answer.elapsedMs).toBeLessThan(STATEMENT_TIMEOUT_MS / 2);
    // Fence, payout state and idempotency records are as they were.
    expect(await snapshot(h.dbUrl)).toEqual(before);

    // Retry-safe means it: the same request, same token and key, now goes through.
    const retry = await claim(payoutId, '2000');
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({
      payoutId,
      state: 'CLAIMED',
      claimToken: '10',
      accountFence: '10',
      attemptCount: 1,
      idempotencyKey: keyFor(payoutId),
    });
  });

  it('refuses, before touching paydb, a budget too short to run a statement in', async () => {
    const { payoutId } = await freshPayout();
    const before = await snapshot(h.dbUrl);
    const res = await claim(payoutId, '100');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      ...UNAVAILABLE,
      details: { reason: 'deadline-too-short', remainingMs: expect.any(Number), requiredMs: 150 },
    });
    expect(await snapshot(h.dbUrl)).toEqual(before);
  });

  it.each(['0', '-5', '1.5', 'soon', '0500', '3600001', '99999999999999999999', '500, 600', ''])(
    'a malformed header %p is 400 VALIDATION_FAILED and changes nothing',
    async (value) => {
      const { payoutId } = await freshPayout();
      const before = await snapshot(h.dbUrl);
      const res = await claim(payoutId, value);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: 'request validation failed',
        retrySafe: false,
        details: {
          fields: [
            {
              field: 'X-Request-Deadline-Ms',
              message: 'must be a positive integer of milliseconds, at most 3600000',
            },
          ],
        },
        traceId: expect.any(String),
      });
      expect(await snapshot(h.dbUrl)).toEqual(before);
    },
  );

  it('without the header the write runs as before', async () => {
    const { payoutId } = await freshPayout();
    const res = await write(h.base, 'claim', payoutId, 10n, bodies.claim());
    expect(res.status).toBe(200);
  });
});
