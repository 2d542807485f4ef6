import { AssertionError } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DlockError, FencedOutError } from '@dlock/lock-api';
import { PaymentResourceClient } from './payment-resource.client';
import { RailProxyClient } from './rail-proxy.client';

/** A local HTTP server recording what the typed clients send (no fakes of the clients themselves). */
let server: http.Server;
let base: string;
const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] =
  [];
let reply: { status: number; body: unknown } = { status: 200, body: {} };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply.body));
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
});

const PAYOUT = '0b5e1c1e-8a3c-4c8e-9a51-3d1a2b4c5d6e';

describe('a missing or invalid token is a programming error, never a warning', () => {
  const payments = () => new PaymentResourceClient(base, 'w-1');
  const rail = () => new RailProxyClient(base, 'w-1', 800);
  const bad: unknown[] = [undefined, null, 0n, -1n, 2n ** 63n, 5, '5'];

  test.each(bad)('payment-resource claim/outcome/post with %p throw before sending', (token) => {
    const c = payments();
    expect(() => c.claim(PAYOUT, token as bigint, 'PENDING')).toThrow(AssertionError);
    expect(() => c.railOutcome(PAYOUT, token as bigint, { outcome: 'SUBMITTED' })).toThrow(
      AssertionError,
    );
    expect(() =>
      c.post(PAYOUT, token as bigint, { submissionId: 's', railReference: 'r' }),
    ).toThrow(AssertionError);
    c.close();
    expect(seen).toHaveLength(0);
  });

  test.each(bad)('rail-proxy submit with %p rejects before sending', async (token) => {
    const c = rail();
    await expect(
      c.submit(token as bigint, {
        payoutId: PAYOUT,
        accountId: 'a',
        amountMinor: 1,
        currency: 'EUR',
        beneficiaryRef: 'b',
      }),
    ).rejects.toThrow(AssertionError);
    c.close();
    expect(seen).toHaveLength(0);
  });
});

test('every protected call sends the token, owner and the payout stable key', async () => {
  const token = 2n ** 53n + 1n;
  const c = new PaymentResourceClient(base, 'w-1');
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'CLAIMED' } };
  await c.claim(PAYOUT, token, 'PENDING');
  reply = { status: 200, body: { payoutId: PAYOUT, state: 'POSTED' } };
  await c.post(PAYOUT, token, { submissionId: 's', railReference: 'r' });
  c.close();
  const r = new RailProxyClient(base, 'w-1', 800);
  reply = {
    status: 200,
    body: {
      submissionId: 's',
      railReference: 'r',
      presentedToken: token.toString(),
      outcome: 'ACKED',
    },
  };
  const ack = await r.submit(token, {
    payoutId: PAYOUT,
    accountId: 'a',
    amountMinor: 1,
    currency: 'EUR',
    beneficiaryRef: 'b',
  });
  r.close();
  expect(ack.presentedToken).toBe(token);
  expect(
    seen.map((x) => [
      x.url,
      x.headers['x-fencing-token'],
      x.headers['x-owner-id'],
      x.headers['x-idempotency-key'],
      x.headers['x-request-deadline-ms'],
    ]),
  ).toEqual([
    // The deadline is each hop's read timeout: 3 s for fenced writes, rail read + 2 s for the submit.
    [`/v1/payouts/${PAYOUT}/claim`, '9007199254740993', 'w-1', `payout-${PAYOUT}`, '3000'],
    [`/v1/payouts/${PAYOUT}/post`, '9007199254740993', 'w-1', `payout-${PAYOUT}`, '3000'],
    ['/v1/rail/submissions', '9007199254740993', 'w-1', `payout-${PAYOUT}`, '2800'],
  ]);
  expect(JSON.parse(seen[1].body)).toEqual({
    railReference: 'r',
    submissionId: 's',
    railOutcome: 'ACKED',
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
  const err: unknown = await c.claim(PAYOUT, 5n, 'PENDING').catch((e: unknown) => e);
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
  await expect(c.claim(PAYOUT, 5n, 'PENDING')).rejects.toBeInstanceOf(DlockError);
  c.close();
  expect(seen).toHaveLength(2);
  seen.length = 0;
  reply = {
    status: 503,
    body: { code: 'RAIL_UNAVAILABLE', message: 'm', retrySafe: true, traceId: 't' },
  };
  const r = new RailProxyClient(base, 'w-1', 800);
  await expect(
    r.submit(5n, {
      payoutId: PAYOUT,
      accountId: 'a',
      amountMinor: 1,
      currency: 'EUR',
      beneficiaryRef: 'b',
    }),
  ).rejects.toMatchObject({ code: 'RAIL_UNAVAILABLE' });
  r.close();
  expect(seen).toHaveLength(1);
});
