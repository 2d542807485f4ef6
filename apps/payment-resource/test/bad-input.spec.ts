import { http } from '@dlock/testing';
import {
  bodies,
  keyFor,
  snapshot,
  startPaymentResource,
  writeHeaders,
  type Harness,
} from './support';

const envelope = (code: string, status: number) => ({
  status,
  body: expect.objectContaining({
    code,
    message: expect.any(String),
    retrySafe: false,
    traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
  }),
});

describe('bad input on every endpoint: an envelope, never a 500, nothing changed', () => {
  let h: Harness;
  let accountId: string;
  let payoutId: string;
  beforeAll(async () => {
    h = await startPaymentResource();
    accountId = await h.fixtures.createAccount({ currency: 'EUR', openingBalanceMinor: 10_000 });
    payoutId = await h.fixtures.createPayout({ accountId, amountMinor: 1_000 });
  });
  afterAll(() => h.close());

  const WRITES: [op: string, body: unknown][] = [
    ['claim', bodies.claim()],
    ['post', bodies.post()],
    ['rail-outcome', bodies.submitted()],
    ['resolve', bodies.resolveAcked()],
  ];

  const headerCases: [name: string, headers: () => Record<string, string>, code: string][] = [
    ['no token', () => ({ 'x-owner-id': 'w', 'x-idempotency-key': 'k' }), 'INVALID_TOKEN'],
    ...['0', '-1', '1e3', '0x10', '+5', '5.0', '007', 'abc', '9223372036854775808', ''].map(
      (t): [string, () => Record<string, string>, string] => [
        `token "${t}"`,
        () => writeHeaders(t, 'w', 'k'),
        'INVALID_TOKEN',
      ],
    ),
    ['no owner', () => ({ 'x-fencing-token': '5', 'x-idempotency-key': 'k' }), 'VALIDATION_FAILED'],
    ['owner too long', () => writeHeaders('5', 'o'.repeat(65), 'k'), 'VALIDATION_FAILED'],
    ['no idempotency key', () => writeHeaders('5', 'w'), 'VALIDATION_FAILED'],
    ['key too long', () => writeHeaders('5', 'w', 'k'.repeat(129)), 'VALIDATION_FAILED'],
  ];

  const bodyCases: [op: string, name: string, body: unknown][] = [
    ['claim', 'missing body', undefined],
    ['claim', 'expectedState POSTED', { expectedState: 'POSTED' }],
    ['claim', 'unknown field', { expectedState: 'PENDING', extra: 1 }],
    ['claim', 'array body', [1, 2]],
    ['post', 'railOutcome TIMEOUT', { ...bodies.post(), railOutcome: 'TIMEOUT' }],
    ['post', 'submissionId not a uuid', { ...bodies.post(), submissionId: 'nope' }],
    [
      'post',
      'railReference missing',
      { submissionId: bodies.post().submissionId, railOutcome: 'ACKED' },
    ],
    ['post', 'railReference a number', { ...bodies.post(), railReference: 5 }],
    ['rail-outcome', 'outcome TIMEOUT', { outcome: 'TIMEOUT' }],
    ['rail-outcome', 'ACKED without submissionId', { outcome: 'ACKED' }],
    ['rail-outcome', 'reason too long', { outcome: 'REJECTED', reason: 'x'.repeat(513) }],
    ['resolve', 'resolution MAYBE', { resolution: 'MAYBE', evidence: 'x' }],
    ['resolve', 'no evidence', { resolution: 'ACKED' }],
    ['abandon', 'short reason', { operator: 'ops', reason: 'short' }],
    ['abandon', 'no operator', { reason: 'a long enough reason' }],
    ['abandon', 'operator too long', { operator: 'o'.repeat(65), reason: 'a long enough reason' }],
  ];

  it.each(
    WRITES.flatMap(([op, body]) =>
      headerCases.map(([name, headers, code]) => [op, name, body, headers, code] as const),
    ),
  )('%s with %s', async (op, _name, body, headers, code) => {
    const before = await snapshot(h.dbUrl);
    const res = await http('POST', `${h.base}/v1/payouts/${payoutId}/${op}`, {
      headers: headers(),
      body,
    });
    expect(res).toMatchObject(envelope(code, 400));
    expect(await snapshot(h.dbUrl)).toEqual(before);
  });

  it.each(bodyCases)('%s with %s', async (op, _name, body) => {
    const before = await snapshot(h.dbUrl);
    const res = await http('POST', `${h.base}/v1/payouts/${payoutId}/${op}`, {
      headers: writeHeaders('5', 'w', keyFor(payoutId)),
      body,
    });
    expect(res).toMatchObject(envelope('VALIDATION_FAILED', 400));
    expect(res.body.details.fields.length).toBeGreaterThan(0);
    expect(await snapshot(h.dbUrl)).toEqual(before);
  });

  it.each(['claim', 'post', 'rail-outcome', 'resolve', 'abandon'])(
    '%s with malformed JSON',
    async (op) => {
      const before = await snapshot(h.dbUrl);
      const res = await http('POST', `${h.base}/v1/payouts/${payoutId}/${op}`, {
        headers: { ...writeHeaders('5', 'w', 'k'), 'content-type': 'application/json' },
        rawBody: '{"expectedState": ',
      });
      expect(res).toMatchObject(envelope('VALIDATION_FAILED', 400));
      expect(await snapshot(h.dbUrl)).toEqual(before);
    },
  );

  it.each(['claim', 'post', 'rail-outcome', 'resolve', 'abandon'])(
    '%s on an unknown or malformed payout id is 404',
    async (op) => {
      const body = Object.fromEntries(WRITES)[op] ?? bodies.abandon();
      for (const id of ['3f1d2c4b-0000-4000-8000-000000000000', 'not-a-uuid']) {
        const res = await http('POST', `${h.base}/v1/payouts/${id}/${op}`, {
          headers: writeHeaders('5', 'w', 'k'),
          body,
        });
        expect(res).toMatchObject(envelope('NOT_FOUND', 404));
      }
    },
  );

  it('P4 and P5: unknown ids are 404 envelopes', async () => {
    for (const path of [
      '/v1/payouts/3f1d2c4b-0000-4000-8000-000000000000',
      '/v1/payouts/not-a-uuid',
      '/v1/accounts/no-such-account',
      '/v1/accounts/bad%20id',
      '/v1/nothing-here',
    ]) {
      expect(await http('GET', `${h.base}${path}`)).toMatchObject(envelope('NOT_FOUND', 404));
    }
  });

  it.each([
    ['no state', ''],
    ['unknown state', 'state=DONE'],
    ['lowercase state', 'state=pending'],
    ['repeated state', 'state=PENDING&state=POSTED'],
    ['limit 0', 'state=PENDING&limit=0'],
    ['limit 501', 'state=PENDING&limit=501'],
    ['limit 1e3', 'state=PENDING&limit=1e3'],
    ['limit 10.0', 'state=PENDING&limit=10.0'],
    ['limit -5', 'state=PENDING&limit=-5'],
    ['limit empty', 'state=PENDING&limit='],
    ['limit 010', 'state=PENDING&limit=010'],
    ['bad cursor', 'state=PENDING&cursor=garbage!'],
    ['forged cursor', `state=PENDING&cursor=${Buffer.from('["x","y"]').toString('base64url')}`],
    ['bad accountId', 'state=PENDING&accountId=a%20b'],
    ['unknown parameter', 'state=PENDING&sort=desc'],
  ])('P1 with %s is 400', async (_name, query) => {
    const res = await http('GET', `${h.base}/v1/payouts?${query}`);
    expect(res).toMatchObject(envelope('VALIDATION_FAILED', 400));
    expect(res.body.details.fields.length).toBeGreaterThan(0);
  });
});

describe('P1 pagination', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startPaymentResource();
  });
  afterAll(() => h.close());

  it('walks every item exactly once with an opaque cursor, filtered by state and account', async () => {
    const a = await h.fixtures.createAccount({ currency: 'EUR', openingBalanceMinor: 0 });
    const b = await h.fixtures.createAccount({ currency: 'USD', openingBalanceMinor: 0 });
    const mine: string[] = [];
    for (let i = 0; i < 7; i++)
      mine.push(await h.fixtures.createPayout({ accountId: a, amountMinor: 10 + i }));
    for (let i = 0; i < 3; i++) await h.fixtures.createPayout({ accountId: b, amountMinor: 5 });
    const seen: string[] = [];
    let cursor: string | undefined;
    const pages: number[] = [];
    for (let guard = 0; guard < 10; guard++) {
      const q = `state=PENDING&accountId=${a}&limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await http('GET', `${h.base}/v1/payouts?${q}`);
      expect(res.status).toBe(200);
      pages.push(res.body.items.length);
      for (const item of res.body.items) {
        expect(item).toEqual({
          payoutId: expect.any(String),
          accountId: a,
          amountMinor: expect.any(Number),
          currency: 'EUR',
          beneficiaryRef: expect.stringMatching(/^ben-/),
          state: 'PENDING',
          attemptCount: 0,
          createdAt: expect.stringMatching(/Z$/),
        });
        seen.push(item.payoutId);
      }
      cursor = res.body.nextCursor;
      if (!cursor) break;
    }
    expect(pages).toEqual([3, 3, 1]);
    expect(seen.sort()).toEqual([...mine].sort());
    const all = await http('GET', `${h.base}/v1/payouts?state=PENDING`);
    expect(all.body.items).toHaveLength(10);
    expect(all.body.nextCursor).toBeUndefined();
    const none = await http('GET', `${h.base}/v1/payouts?state=POSTED&limit=500`);
    expect(none.body).toEqual({ items: [] });
  });
});
