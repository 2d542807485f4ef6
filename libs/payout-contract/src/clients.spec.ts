import { AssertionError } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DlockError, FencedOutError, type FenceCredential } from '@dlock/lock-api';
import { PeerProtocolError } from '@dlock/http-client';
import { PaymentResourceClient } from './payment-resource.client';
import { RailProxyClient } from './rail-proxy.client';
import { RAIL_RECEIPT_HEADER } from './rail-receipt';
import { registerPayoutVocabulary } from './vocabulary';

// As every app calling the payout services does when its module loads: their codes are understood.
registerPayoutVocabulary();

/** A grant as a handle holds it: the token and the lock-server's proof of it. */
const fence = (token: unknown, proof = 'grant-proof'): FenceCredential =>
  ({ token, proof }) as FenceCredential;
const INSTRUCTION = 'instruction';
/** A rail receipt as the proxy signs it; the clients carry it opaque. */
const RECEIPT = 'eyJhbGciOiJFZERTQSJ9.receipt.sig';

/** The executor's submit budget with an 800 ms rail read timeout (apps/executor lease.rules.ts). */
const SUBMIT_BUDGET = { connectTimeoutMs: 1_000, readTimeoutMs: 2_800 };

/** A local HTTP server recording what the typed clients send (no fakes of the clients themselves). */
let server: http.Server;
let base: string;
const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] =
  [];
let reply: { status: number; body: unknown } = { status: 200, body: {} };
/** Answers taken in order before `reply`, for calls that make several requests. */
const queued: { status: number; body: unknown }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const answer = queued.shift() ?? reply;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
  queued.length = 0;
});

const PAYOUT = '0b5e1c1e-8a3c-4c8e-9a51-3d1a2b4c5d6e';
const SUBMISSION = {
  payoutId: PAYOUT,
  accountId: 'a',
  amountMinor: 1,
  currency: 'EUR',
  beneficiaryRef: 'b',
};

describe('a missing or invalid token or proof is a programming error, never a warning', () => {
  const payments = () => new PaymentResourceClient(base, 'w-1');
  const rail = () => new RailProxyClient(base, 'w-1', SUBMIT_BUDGET);
  const bad: FenceCredential[] = [
    ...[undefined, null, 0n, -1n, 2n ** 63n, 5, '5'].map((token) => fence(token)),
    fence(5n, ''),
    { token: 5n, proof: undefined } as unknown as FenceCredential,
  ];

  test.each(bad)(
    'payment-resource claim/outcome/post/resolve with %p throw before sending',
    async (f) => {
      const c = payments();
      expect(() => c.claim(PAYOUT, f, 'PENDING')).toThrow(AssertionError);
      await expect(c.markSubmitted(PAYOUT, f)).rejects.toThrow(AssertionError);
      expect(() => c.railOutcome(PAYOUT, f, { outcome: 'AMBIGUOUS' })).toThrow(AssertionError);
      expect(() =>
        c.railOutcome(PAYOUT, f, {
          outcome: 'ACKED',
          submissionId: 's',
          railReference: 'r',
          railReceipt: RECEIPT,
        }),
      ).toThrow(AssertionError);
      expect(() =>
        c.post(PAYOUT, f, { submissionId: 's', railReference: 'r', railReceipt: RECEIPT }),
      ).toThrow(AssertionError);
      expect(() => c.resolve(PAYOUT, f, { resolution: 'ACKED', evidence: 'e' }, RECEIPT)).toThrow(
        AssertionError,
      );
      c.close();
      expect(seen).toHaveLength(0);
    },
  );

  test.each(bad)('rail-proxy submit with %p rejects before sending', async (f) => {
    const c = rail();
    await expect(c.submit(f, INSTRUCTION, SUBMISSION)).rejects.toThrow(AssertionError);
    c.close();
    expect(seen).toHaveLength(0);
  });

  test('rail-proxy submit without an instruction rejects before sending', async () => {
    const c = rail();
    await expect(c.submit(fence(5n), '', SUBMISSION)).rejects.toThrow(AssertionError);
    c.close();
    expect(seen).toHaveLength(0);
  });
});

test('every protected call sends the token, its proof, the owner and the payout stable key', async () => {
  const token = 2n ** 53n + 1n;
  const c = new PaymentResourceClient(base, 'w-1');
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'CLAIMED' } };
  await c.claim(PAYOUT, fence(token), 'PENDING');
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'POSTED' } };
  await c.post(PAYOUT, fence(token), {
    submissionId: 's',
    railReference: 'r',
    railReceipt: RECEIPT,
  });
  c.close();
  const r = new RailProxyClient(base, 'w-1', SUBMIT_BUDGET);
  reply = {
    status: 200,
    body: {
      submissionId: 's',
      railReference: 'r',
      presentedToken: token.toString(),
      outcome: 'ACKED',
      railReceipt: RECEIPT,
    },
  };
  const ack = await r.submit(fence(token), INSTRUCTION, SUBMISSION);
  r.close();
  expect(ack).toEqual({
    submissionId: 's',
    railReference: 'r',
    presentedToken: token,
    railReceipt: RECEIPT,
  });
  for (const call of seen) expect(call.headers['x-grant-proof']).toBe('grant-proof');
  expect(seen.map((x) => x.headers['x-payout-instruction'])).toEqual([
    undefined,
    undefined,
    INSTRUCTION,
  ]);
  expect(
    seen.map((x) => [
      x.url,
      x.headers['x-fencing-token'],
      x.headers['x-owner-id'],
      x.headers['x-idempotency-key'],
      x.headers['x-request-deadline-ms'],
    ]),
  ).toEqual([
    // The deadline is each hop's read timeout: 3 s for fenced writes, the caller's budget for the submit.
    [`/v1/payouts/${PAYOUT}/claim`, '9007199254740993', 'w-1', `payout-${PAYOUT}`, '3000'],
    [`/v1/payouts/${PAYOUT}/post`, '9007199254740993', 'w-1', `payout-${PAYOUT}`, '3000'],
    ['/v1/rail/submissions', '9007199254740993', 'w-1', `payout-${PAYOUT}`, '2800'],
  ]);
  // P3 is booked on the ACKED receipt: in its header, never in the body.
  expect(seen.map((x) => x.headers[RAIL_RECEIPT_HEADER])).toEqual([undefined, RECEIPT, undefined]);
  expect(JSON.parse(seen[1].body)).toEqual({
    railReference: 'r',
    submissionId: 's',
    railOutcome: 'ACKED',
  });
});

describe("P6: a rail outcome carries its receipt as X-Rail-Receipt, the body stays the contract's", () => {
  const write = async (record: Parameters<PaymentResourceClient['railOutcome']>[2]) => {
    const c = new PaymentResourceClient(base, 'w-1');
    reply = { status: 200, body: { payoutId: PAYOUT, state: 'RAIL_ACKED' } };
    await c.railOutcome(PAYOUT, fence(5n), record);
    c.close();
    expect(seen).toHaveLength(1);
    expect(seen[0].url).toBe(`/v1/payouts/${PAYOUT}/rail-outcome`);
    return { receipt: seen[0].headers[RAIL_RECEIPT_HEADER], body: JSON.parse(seen[0].body) };
  };

  test('ACKED', async () => {
    const sent = await write({
      outcome: 'ACKED',
      submissionId: 's',
      railReference: 'r',
      railReceipt: RECEIPT,
    });
    expect(sent).toEqual({
      receipt: RECEIPT,
      body: { outcome: 'ACKED', submissionId: 's', railReference: 'r' },
    });
  });

  test('REJECTED', async () => {
    const sent = await write({
      outcome: 'REJECTED',
      submissionId: 's',
      reason: 'rail declined the transfer',
      railReceipt: RECEIPT,
    });
    expect(sent).toEqual({
      receipt: RECEIPT,
      body: { outcome: 'REJECTED', submissionId: 's', reason: 'rail declined the transfer' },
    });
  });

  test('AMBIGUOUS: no receipt, no header', async () => {
    const record = { outcome: 'AMBIGUOUS' as const, submissionId: 's', reason: 'timeout' };
    expect(await write(record)).toEqual({ receipt: undefined, body: record });
  });

  test('SUBMITTED: no receipt, no header', async () => {
    const c = new PaymentResourceClient(base, 'w-1');
    reply = {
      status: 200,
      body: { payoutId: PAYOUT, state: 'RAIL_SUBMITTED', railInstruction: INSTRUCTION },
    };
    await c.markSubmitted(PAYOUT, fence(5n));
    c.close();
    expect(seen).toHaveLength(1);
    expect(seen[0].headers[RAIL_RECEIPT_HEADER]).toBeUndefined();
    expect(JSON.parse(seen[0].body)).toEqual({ outcome: 'SUBMITTED' });
  });
});

test('a 409 is never retried and comes back as its typed error', async () => {
  const c = new PaymentResourceClient(base, 'w-1');
  reply = {
    status: 409,
    body: {
      code: 'FENCED_OUT',
      message: 'm',
      retrySafe: false,
      details: { resourceType: 'account' },
      traceId: 't',
    },
  };
  const err: unknown = await c.claim(PAYOUT, fence(5n), 'PENDING').catch((e: unknown) => e);
  c.close();
  expect(err).toBeInstanceOf(FencedOutError);
  expect(seen).toHaveLength(1);
});

test('a 503 on a fenced write is retried exactly once; the submit never is', async () => {
  reply = {
    status: 503,
    body: { code: 'UNAVAILABLE', message: 'm', retrySafe: true, traceId: 't' },
  };
  const c = new PaymentResourceClient(base, 'w-1');
  await expect(c.claim(PAYOUT, fence(5n), 'PENDING')).rejects.toBeInstanceOf(DlockError);
  c.close();
  expect(seen).toHaveLength(2);
  seen.length = 0;
  reply = {
    status: 503,
    body: { code: 'RAIL_UNAVAILABLE', message: 'm', retrySafe: true, traceId: 't' },
  };
  const r = new RailProxyClient(base, 'w-1', SUBMIT_BUDGET);
  await expect(r.submit(fence(5n), INSTRUCTION, SUBMISSION)).rejects.toMatchObject({
    code: 'RAIL_UNAVAILABLE',
  });
  r.close();
  expect(seen).toHaveLength(1);
});

const envelope = (code: string) => ({ code, message: 'm', retrySafe: false, traceId: 't' });

test('the reconciler: P8 under its own token and owner, and floor raises attributed by X-Operator and carrying their notice', async () => {
  const c = new PaymentResourceClient(base, 'reconciler-1');
  const r = new RailProxyClient(base, 'reconciler-1');
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'RAIL_ACKED' } };
  await expect(
    c.resolve(
      PAYOUT,
      fence(7n),
      { resolution: 'ACKED', evidence: 'one settled transfer' },
      RECEIPT,
    ),
  ).resolves.toEqual({ payoutId: PAYOUT, state: 'RAIL_ACKED' });
  const raise = {
    revocationId: 'r-1',
    accountId: 'acct-1',
    floor: 2n ** 60n,
    notice: 'h.p.s',
    reason: 'revoked',
  };
  queued.push(
    { status: 200, body: { raised: true } },
    { status: 404, body: envelope('NOT_FOUND') },
  );
  expect(await c.raiseFenceFloor(raise)).toBe('raised');
  expect(await c.raiseFenceFloor(raise)).toBe('not_found');
  reply = { status: 200, body: { raised: false } };
  expect(await r.raiseHighWaterFloor(raise)).toBe('unchanged');
  c.close();
  r.close();
  expect(seen.map((x) => [x.url, x.headers['x-fencing-token'], x.headers['x-operator']])).toEqual([
    [`/v1/payouts/${PAYOUT}/resolve`, '7', undefined],
    ['/v1/accounts/acct-1/fence-floor', undefined, 'reconciler-1'],
    ['/v1/accounts/acct-1/fence-floor', undefined, 'reconciler-1'],
    ['/v1/rail/high-water/acct-1/floor', undefined, 'reconciler-1'],
  ]);
  expect(seen[0].headers['x-owner-id']).toBe('reconciler-1');
  // P8 is resolved on the proxy's receipt of the rail's record (R3): in its header, not the body.
  expect(seen[0].headers[RAIL_RECEIPT_HEADER]).toBe(RECEIPT);
  expect(JSON.parse(seen[0].body)).toEqual({
    resolution: 'ACKED',
    evidence: 'one settled transfer',
  });
  expect(seen.slice(1).map((x) => x.headers[RAIL_RECEIPT_HEADER])).toEqual([
    undefined,
    undefined,
    undefined,
  ]);
  expect(JSON.parse(seen[3].body)).toEqual({
    floor: '1152921504606846976',
    notice: 'h.p.s',
    revocationId: 'r-1',
    reason: 'revoked',
  });
});

test('listUpTo follows nextCursor and stops at the limit asked for', async () => {
  const item = (n: number) => ({
    payoutId: `p-${n}`,
    accountId: 'a',
    amountMinor: 1,
    currency: 'EUR',
    beneficiaryRef: 'b',
    state: 'RAIL_AMBIGUOUS',
    attemptCount: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
  });
  queued.push(
    { status: 200, body: { items: [item(1), item(2)], nextCursor: 'c-1' } },
    { status: 200, body: { items: [item(3)], nextCursor: 'c-2' } },
  );
  const c = new PaymentResourceClient(base, 'w-1');
  const items = await c.listUpTo('RAIL_AMBIGUOUS', 3);
  c.close();
  expect(items.map((i) => i.payoutId)).toEqual(['p-1', 'p-2', 'p-3']);
  expect(seen.map((x) => x.url)).toEqual([
    '/v1/payouts?state=RAIL_AMBIGUOUS&limit=3',
    '/v1/payouts?state=RAIL_AMBIGUOUS&limit=1&cursor=c-1',
  ]);
});

test('R2: 404 means no records; an answer off the contract is a protocol error, not a guess', async () => {
  const r = new RailProxyClient(base, 'w-1');
  reply = { status: 404, body: envelope('NOT_FOUND') };
  await expect(r.records(PAYOUT)).resolves.toEqual([]);
  const record = { submissionId: 's', railReference: null, presentedToken: '9' };
  reply = { status: 200, body: { payoutId: PAYOUT, submissions: [{ ...record, outcome: null }] } };
  await expect(r.records(PAYOUT)).resolves.toEqual([
    { ...record, outcome: null, presentedToken: 9n, railReceipt: null },
  ]);
  // An ACKED record carries the receipt P6 ACKED and P3 are booked on.
  const acked = {
    ...record,
    railReference: 'r',
    outcome: 'ACKED',
    railReceipt: RECEIPT,
  };
  const fenced = { ...record, submissionId: 's-0', outcome: 'FENCED', railReceipt: null };
  reply = { status: 200, body: { payoutId: PAYOUT, submissions: [fenced, acked] } };
  await expect(r.records(PAYOUT)).resolves.toEqual([
    { ...fenced, presentedToken: 9n },
    { ...acked, presentedToken: 9n },
  ]);
  reply = {
    status: 200,
    body: { payoutId: PAYOUT, submissions: [{ ...acked, railReceipt: 42 }] },
  };
  await expect(r.records(PAYOUT)).rejects.toBeInstanceOf(PeerProtocolError);
  reply = {
    status: 200,
    body: { payoutId: PAYOUT, submissions: [{ ...record, outcome: 'PAID' }] },
  };
  await expect(r.records(PAYOUT)).rejects.toBeInstanceOf(PeerProtocolError);
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'NOT_A_STATE' } };
  const c = new PaymentResourceClient(base, 'w-1');
  await expect(c.claim(PAYOUT, fence(5n), 'PENDING')).rejects.toBeInstanceOf(PeerProtocolError);
  c.close();
  r.close();
});

test('R1: a 200 without its receipt is a protocol error, never an ack to record', async () => {
  const r = new RailProxyClient(base, 'w-1', SUBMIT_BUDGET);
  const acked = { submissionId: 's', railReference: 'r', presentedToken: '5', outcome: 'ACKED' };
  reply = { status: 200, body: acked };
  await expect(r.submit(fence(5n), INSTRUCTION, SUBMISSION)).rejects.toBeInstanceOf(
    PeerProtocolError,
  );
  reply = { status: 200, body: { ...acked, railReceipt: null } };
  await expect(r.submit(fence(5n), INSTRUCTION, SUBMISSION)).rejects.toBeInstanceOf(
    PeerProtocolError,
  );
  r.close();
});

test('R1: a rail decline (422) comes back as its typed error with the receipt in its details', async () => {
  const r = new RailProxyClient(base, 'w-1', SUBMIT_BUDGET);
  reply = {
    status: 422,
    body: {
      ...envelope('VALIDATION_FAILED'),
      details: { outcome: 'REJECTED', submissionId: 's', railReceipt: RECEIPT },
    },
  };
  const err: unknown = await r.submit(fence(5n), INSTRUCTION, SUBMISSION).catch((e: unknown) => e);
  r.close();
  expect(err).toBeInstanceOf(DlockError);
  expect(err).toMatchObject({
    code: 'VALIDATION_FAILED',
    httpStatus: 422,
    details: { outcome: 'REJECTED', submissionId: 's', railReceipt: RECEIPT },
  });
  expect(seen).toHaveLength(1);
});

test("R3: the rail's record as the proxy read it, with the receipt it earns or null", async () => {
  const r = new RailProxyClient(base, 'reconciler-1');
  const lookup = {
    clientRef: `payout-${PAYOUT}`,
    asOf: '2026-12-01T06:00:00.000Z',
    settlementWindowMs: 60_000,
    transfers: [
      {
        railReference: 'rr-1',
        clientRef: `payout-${PAYOUT}`,
        amountMinor: 1,
        currency: 'EUR',
        acceptedAt: '2026-12-01T05:59:00.000Z',
        settled: true,
        settledAt: '2026-12-01T05:59:30.000Z',
        duplicateOf: null,
      },
    ],
  };
  reply = { status: 200, body: { payoutId: PAYOUT, lookup, railReceipt: RECEIPT } };
  await expect(r.evidence(PAYOUT)).resolves.toEqual({
    payoutId: PAYOUT,
    lookup,
    railReceipt: RECEIPT,
  });
  reply = { status: 200, body: { payoutId: PAYOUT, lookup, railReceipt: null } };
  await expect(r.evidence(PAYOUT)).resolves.toMatchObject({ railReceipt: null });
  reply = { status: 200, body: { payoutId: PAYOUT, lookup, railReceipt: 42 } };
  await expect(r.evidence(PAYOUT)).rejects.toBeInstanceOf(PeerProtocolError);
  r.close();
  expect(seen.map((x) => [x.method, x.url])).toEqual(
    Array.from({ length: 3 }, () => ['GET', `/v1/rail/submissions/${PAYOUT}/evidence`]),
  );
});

test('a rail-proxy client built without a submit budget cannot submit', async () => {
  const r = new RailProxyClient(base, 'reconciler-1');
  await expect(r.submit(fence(5n), INSTRUCTION, SUBMISSION)).rejects.toThrow(AssertionError);
  r.close();
  expect(seen).toHaveLength(0);
});

describe('console reads', () => {
  const payments = () => new PaymentResourceClient(base, 'console');
  const rail = () => new RailProxyClient(base, 'console');

  it('lists accounts with GET /v1/accounts?limit= and keeps fences exact', async () => {
    const body = {
      accounts: [
        { accountId: 'a', currency: 'EUR', balanceMinor: 5, fence: '0' },
        { accountId: 'b', currency: 'EUR', balanceMinor: 0, fence: '9007199254740993' },
      ],
      truncated: true,
    };
    reply = { status: 200, body };
    expect(await payments().accounts(2)).toEqual(body);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v1/accounts?limit=2' });
  });

  it('reads stats with GET /v1/payouts/stats?windowSeconds=, every state present', async () => {
    const byState = {
      PENDING: 1,
      CLAIMED: 0,
      RAIL_SUBMITTED: 0,
      RAIL_ACKED: 0,
      RAIL_AMBIGUOUS: 0,
      POSTED: 2,
      FAILED: 0,
      ABANDONED: 0,
    };
    const body = {
      windowSeconds: 60,
      byState,
      postedPerBucket: [{ at: '2026-12-01T06:00:00.000Z', count: 2 }],
      bucketSeconds: 10,
      latencyMillis: { p50: 10, p90: null, p99: null, count: 2 },
      latencyMillisAllTime: { p50: 12, p90: 40, p99: 90, count: 7 },
    };
    reply = { status: 200, body };
    expect(await payments().stats(60)).toEqual(body);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v1/payouts/stats?windowSeconds=60' });
    const { PENDING: _gone, ...missing } = byState;
    reply = { status: 200, body: { ...body, byState: missing } };
    await expect(payments().stats(60)).rejects.toBeInstanceOf(PeerProtocolError);
  });

  it('lists high-water marks with GET /v1/rail/high-water?limit= and refuses a non-token mark', async () => {
    const body = { accounts: [{ accountId: 'a', highWater: '42' }], truncated: false };
    reply = { status: 200, body };
    expect(await rail().highWater(100)).toEqual(body);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v1/rail/high-water?limit=100' });
    reply = {
      status: 200,
      body: { accounts: [{ accountId: 'a', highWater: 42.5 }], truncated: false },
    };
    await expect(rail().highWater(100)).rejects.toBeInstanceOf(PeerProtocolError);
  });
});
