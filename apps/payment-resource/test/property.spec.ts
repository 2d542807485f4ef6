import fc from 'fast-check';
import { Client } from 'pg';
import {
  bodies,
  ledgerInvariants,
  startPaymentResource,
  write,
  type Harness,
  type Op,
} from './support';

type Kind =
  | 'claim'
  | 'reclaim'
  | 'submitted'
  | 'acked'
  | 'rejected'
  | 'ambiguous'
  | 'post'
  | 'resolve'
  | 'abandon';

const ACTIONS: Record<Kind, { op: Op; body: () => unknown }> = {
  claim: { op: 'claim', body: () => bodies.claim('PENDING') },
  reclaim: { op: 'claim', body: () => bodies.claim('CLAIMED') },
  submitted: { op: 'rail-outcome', body: bodies.submitted },
  acked: { op: 'rail-outcome', body: bodies.acked },
  rejected: { op: 'rail-outcome', body: bodies.rejected },
  ambiguous: { op: 'rail-outcome', body: bodies.ambiguous },
  post: { op: 'post', body: bodies.post },
  resolve: { op: 'resolve', body: bodies.resolveAcked },
  abandon: { op: 'abandon', body: bodies.abandon },
};

// 'auto' is whatever the payout's current state invites next, so runs also reach POSTED.
const NEXT: Record<string, Kind> = {
  PENDING: 'claim',
  CLAIMED: 'submitted',
  RAIL_SUBMITTED: 'acked',
  RAIL_ACKED: 'post',
  RAIL_AMBIGUOUS: 'resolve',
};

const step = fc.record({
  kind: fc.oneof(
    { weight: 3, arbitrary: fc.constant('auto' as const) },
    { weight: 2, arbitrary: fc.constantFrom(...(Object.keys(ACTIONS) as Kind[])) },
  ),
  payout: fc.nat({ max: 1 }),
  // The current holder mostly continues; sometimes a newer holder arrives; sometimes a random
  // (often stale) token shows up.
  token: fc.oneof(
    { weight: 4, arbitrary: fc.constant('holder' as const) },
    { weight: 1, arbitrary: fc.constant('newer' as const) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 60 }) },
  ),
  key: fc.constantFrom('stable', 'stable', 'other'),
});

describe('property: random fenced writes never unbalance the ledger or lower a fence', () => {
  let h: Harness;
  let db: Client;
  let posted = 0;
  let fencedOut = 0;
  beforeAll(async () => {
    h = await startPaymentResource();
    db = new Client({ connectionString: h.dbUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db.end();
    await h.close();
  });

  it('holds for random sequences of claim / rail-outcome / post / resolve / abandon', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 16 }), async (steps) => {
        const accountId = await h.fixtures.createAccount({
          currency: 'EUR',
          openingBalanceMinor: 2_000,
        });
        const payouts = [
          await h.fixtures.createPayout({ accountId, amountMinor: 900 }),
          await h.fixtures.createPayout({ accountId, amountMinor: 1_300 }),
        ];
        const read = async (sql: string, params: unknown[]) =>
          (await db.query(sql, params)).rows[0];
        let fence = 0n;
        let holder = 10n;
        for (const s of steps) {
          const payoutId = payouts[s.payout];
          const { state } = await read(`SELECT state FROM payout WHERE payout_id = $1`, [payoutId]);
          const kind = s.kind === 'auto' ? (NEXT[state as string] ?? 'abandon') : s.kind;
          const a = ACTIONS[kind];
          const token =
            s.token === 'holder' ? holder : s.token === 'newer' ? fence + 1n : BigInt(s.token);
          const res = await write(h.base, a.op, payoutId, token, a.body(), {
            key: `${s.key}-${payoutId}`,
          });
          // Never a 500; only the codes the contract lists for these endpoints.
          expect([200, 409, 422]).toContain(res.status);
          if (res.body?.code === 'FENCED_OUT') {
            fencedOut++;
            expect(BigInt(res.body.details.highestToken)).toBeGreaterThanOrEqual(token);
          }
          const now = BigInt(
            (await read(`SELECT fence FROM account WHERE account_id = $1`, [accountId])).fence,
          );
          expect(now).toBeGreaterThanOrEqual(fence); // fences never decrease
          if (res.status === 200 && a.op !== 'abandon') {
            // Admitted (or replayed from an earlier admission): the fence is at least its token.
            expect(now).toBeGreaterThanOrEqual(token);
            holder = now;
          }
          fence = now;
        }
        expect(await ledgerInvariants(h.dbUrl)).toEqual({ unbalancedGroups: 0, wrongBalances: 0 });
        // Each posted payout has exactly its two legs, both under the token that posted it.
        const rows = (
          await db.query(
            `SELECT p.state, p.token_stamp, count(e.entry_id)::int AS legs,
                    min(e.fence) AS min_fence, max(e.fence) AS max_fence
               FROM payout p LEFT JOIN ledger_entry e ON e.payout_id = p.payout_id
              WHERE p.account_id = $1 GROUP BY p.payout_id`,
            [accountId],
          )
        ).rows;
        for (const row of rows) {
          expect(row.legs).toBe(row.state === 'POSTED' ? 2 : 0);
          if (row.state === 'POSTED') {
            posted++;
            expect(row.min_fence).toBe(row.max_fence);
          }
        }
      }),
      { numRuns: 30, seed: 20260101 },
    );
    // The generator does reach the interesting places (not a vacuous pass).
    expect(posted).toBeGreaterThan(0);
    expect(fencedOut).toBeGreaterThan(0);
  });
});
