import net from 'node:net';
import {
  http,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  testBearer,
  testGrantProof,
  type RunningApp,
} from '@dlock/testing';
import { payoutLockKey } from '@dlock/payout-contract';
import { bodies, keyFor, snapshot, write, writeHeaders } from './support';

/** One request as bytes, so a header can be sent twice (fetch would join them). */
function raw(base: string, lines: string[], body = ''): Promise<{ status: number; body: any }> {
  const { port } = new URL(base);
  const head = [...lines, `content-length: ${Buffer.byteLength(body)}`, 'connection: close'];
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      try {
        resolve({ status, body: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) });
      } catch (err) {
        reject(new Error(`${String(err)}: ${text}`));
      }
    });
    socket.write(`${head.join('\r\n')}\r\nhost: x\r\n\r\n${body}`);
  });
}

/** A claim as the honest owner would send it, its proof genuine. */
async function claimLines(payoutId: string, accountId: string, token: string, owner: string) {
  return [
    `POST /v1/payouts/${payoutId}/claim HTTP/1.1`,
    `authorization: ${await testBearer(owner, 'payment-resource')}`,
    `x-fencing-token: ${token}`,
    `x-owner-id: ${owner}`,
    `x-idempotency-key: ${keyFor(payoutId)}`,
    `x-grant-proof: ${testGrantProof({ key: payoutLockKey(accountId), token: BigInt(token), owner })}`,
  ];
}

const counts = (statuses: string[]) =>
  statuses.reduce<Record<string, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});

/**
 * Attacks of docs/security.md ("Attacks tried") against a real payment-resource
 * process: each is refused, leaves paydb as it was, and hides nothing from
 * the safety feed; the honest worker still claims.
 */
describe('payment-resource under hostile callers', () => {
  let dbUrl: string;
  let app: RunningApp;
  beforeAll(async () => {
    dbUrl = await migratedDatabase('paydb');
    // A budget a test can exhaust: 300 requests per identity per minute.
    app = await spawnApp('payment-resource', {
      PAYDB_URL: dbUrl,
      PAYMENT_RATE_LIMIT: '300',
      PAYMENT_RATE_WINDOW_MS: '60000',
    });
  });
  afterAll(() => app?.stop());

  it('1,200 garbage proofs from one identity are limited and counted on one record: the real fenced_out stays in the feed', async () => {
    const accountId = await seedFundedAccount(dbUrl);
    const honest = await seedPendingPayout(dbUrl, accountId);
    const stale = await seedPendingPayout(dbUrl, accountId);
    expect((await write(app.url, 'claim', honest, '10', bodies.claim())).status).toBe(200);
    const fenced = await write(app.url, 'claim', stale, '5', bodies.claim(), {
      owner: 'worker-old',
    });
    expect(fenced.body.code).toBe('FENCED_OUT');
    const before = await snapshot(dbUrl);

    const statuses: string[] = [];
    for (let batch = 0; batch < 24; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          http('POST', `${app.url}/v1/payouts/${stale}/claim`, {
            headers: {
              ...writeHeaders('11', 'mallory', keyFor(stale)),
              'x-grant-proof': 'garbage',
            },
            body: bodies.claim(),
          }),
        ),
      );
      statuses.push(...answers.map((a) => `${a.status} ${a.body.code}`));
    }
    expect(counts(statuses)).toEqual({ '403 PROOF_REJECTED': 300, '429 CONTENTION_EXCEEDED': 900 });
    expect(await snapshot(dbUrl)).toEqual(before);

    const feed = await http('GET', `${app.url}/v1/safety-events?limit=500`);
    expect(feed.status).toBe(200);
    const events = feed.body.events as { event: string; fields: any; count?: number }[];
    expect(events.filter((e) => e.event === 'fenced_out')).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ ownerId: 'worker-old', presentedToken: '5' }),
        count: 1,
      }),
    ]);
    const garbage = events.filter((e) => e.event === 'proof_rejected');
    expect(garbage).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ ownerId: 'mallory' }),
        count: 300,
        lastAt: expect.any(String),
      }),
    ]);
    // Another identity's budget is its own: the honest holder moves on.
    expect((await write(app.url, 'rail-outcome', honest, '10', bodies.submitted())).status).toBe(
      200,
    );
  });

  it('a JSON body sent as text/plain, or with no type, is 415; a body-less request needs no type', async () => {
    const accountId = await seedFundedAccount(dbUrl);
    const payoutId = await seedPendingPayout(dbUrl, accountId);
    const before = await snapshot(dbUrl);
    const lines = await claimLines(payoutId, accountId, '20', 'worker-415');
    const body = JSON.stringify(bodies.claim());
    for (const type of [
      'content-type: text/plain',
      'content-type: application/x-www-form-urlencoded',
    ]) {
      const res = await raw(app.url, [...lines, type], body);
      expect({ type, status: res.status, code: res.body.code }).toEqual({
        type,
        status: 415,
        code: 'VALIDATION_FAILED',
      });
    }
    expect((await raw(app.url, lines, body)).status).toBe(415);
    expect(await snapshot(dbUrl)).toEqual(before);
    const read = await raw(app.url, [
      `GET /v1/payouts/${payoutId} HTTP/1.1`,
      `authorization: ${await testBearer('operator', 'payment-resource')}`,
    ]);
    expect(read.status).toBe(200);
    const json = await raw(
      app.url,
      [...lines, 'content-type: application/json; charset=utf-8'],
      body,
    );
    expect(json.status).toBe(200);
  });

  it('a header that must come once and comes twice is 400, whichever copy is genuine', async () => {
    const accountId = await seedFundedAccount(dbUrl);
    const payoutId = await seedPendingPayout(dbUrl, accountId);
    const before = await snapshot(dbUrl);
    const lines = await claimLines(payoutId, accountId, '30', 'worker-dup');
    const body = JSON.stringify(bodies.claim());
    const other = `authorization: ${await testBearer('mallory', 'payment-resource')}`;
    const twice: [string, string[]][] = [
      ['Authorization, genuine first', [...lines, other]],
      ['Authorization, genuine last', [lines[0], other, ...lines.slice(1)]],
      ['X-Fencing-Token', [...lines, 'x-fencing-token: 31']],
      ['X-Grant-Proof', [...lines, `x-grant-proof: ${lines[5].slice('x-grant-proof: '.length)}`]],
      ['X-Idempotency-Key', [...lines, `X-Idempotency-Key: ${keyFor(payoutId)}`]],
    ];
    for (const [name, headers] of twice) {
      const res = await raw(app.url, [...headers, 'content-type: application/json'], body);
      expect({ name, status: res.status, code: res.body.code }).toEqual({
        name,
        status: 400,
        code: 'VALIDATION_FAILED',
      });
    }
    expect(await snapshot(dbUrl)).toEqual(before);
    const once = await raw(app.url, [...lines, 'content-type: application/json'], body);
    expect(once.status).toBe(200);
  });
});
