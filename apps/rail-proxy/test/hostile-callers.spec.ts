import { http, migratedDatabase, withClient, type RunningApp } from '@dlock/testing';
import { railClientRef } from '@dlock/payout-contract';
import {
  keyOf,
  newPayout,
  startProxy,
  startStub,
  stubStats,
  submit,
  transfersFor,
} from './rail-fixtures';

/** Everything a refused submission must leave as it was. */
function proxydbState(dbUrl: string) {
  return withClient(dbUrl, async (c) => {
    const q = async (sql: string) => (await c.query(sql)).rows;
    return {
      submissions: await q(
        `SELECT submission_id, outcome FROM rail_submission ORDER BY submission_id`,
      ),
      scopes: await q(`SELECT count(*)::int AS n FROM rail_idempotency`),
      marks: await q(`SELECT account_id, highest_token FROM rail_high_water ORDER BY account_id`),
    };
  });
}

/**
 * A flood of garbage proofs against a real rail-proxy (docs/security.md,
 * "Attacks tried"): the identity is limited, its refusals count on one feed
 * record, the real fenced_out stays readable, proxydb and the rail are untouched.
 */
describe('rail-proxy under a garbage-proof flood', () => {
  let db: string;
  let stub: RunningApp;
  let proxy: RunningApp;

  beforeAll(async () => {
    db = await migratedDatabase('proxydb');
    stub = await startStub();
    proxy = await startProxy(db, stub.url, {
      RAIL_PROXY_RATE_LIMIT: '100',
      RAIL_PROXY_RATE_WINDOW_MS: '60000',
    });
  });
  afterAll(async () => {
    await proxy?.stop();
    await stub?.stop();
  });

  it('limits the identity, coalesces its refusals, keeps the real fenced_out, changes nothing', async () => {
    const first = newPayout();
    const second = newPayout(first.accountId);
    expect((await submit(proxy.url, first, '20')).status).toBe(200);
    const stale = await submit(proxy.url, second, '15', { ownerId: 'worker-stale' });
    expect(stale.body.code).toBe('FENCED_OUT');
    const before = await proxydbState(db);
    const received = (await stubStats(stub.url)).submitsReceived;

    const statuses: string[] = [];
    for (let batch = 0; batch < 8; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          http('POST', `${proxy.url}/v1/rail/submissions`, {
            headers: {
              'x-fencing-token': '21',
              'x-owner-id': 'mallory',
              'x-idempotency-key': keyOf(second),
              'x-grant-proof': 'garbage',
            },
            body: second,
          }),
        ),
      );
      statuses.push(...answers.map((a) => `${a.status} ${a.body.code}`));
    }
    const counts = statuses.reduce<Record<string, number>>(
      (m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }),
      {},
    );
    expect(counts).toEqual({ '403 PROOF_REJECTED': 100, '429 CONTENTION_EXCEEDED': 300 });
    expect(await proxydbState(db)).toEqual(before);
    expect((await stubStats(stub.url)).submitsReceived).toBe(received);

    const feed = await http('GET', `${proxy.url}/v1/safety-events?limit=500`);
    const events = feed.body.events as { event: string; fields: any; count?: number }[];
    expect(events.filter((e) => e.event === 'fenced_out')).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ ownerId: 'worker-stale', presentedToken: '15' }),
        count: 1,
      }),
    ]);
    expect(events.filter((e) => e.event === 'proof_rejected')).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ ownerId: 'mallory' }),
        count: 100,
      }),
    ]);
    // The honest holder's budget is its own: it submits the payout once.
    expect((await submit(proxy.url, second, '21')).status).toBe(200);
    expect(await transfersFor(stub.url, railClientRef(second.payoutId))).toHaveLength(1);
  });
});
