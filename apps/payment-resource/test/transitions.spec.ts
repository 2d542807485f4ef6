import { PAYOUT_STATES, type PayoutState } from '@dlock/payout-contract';
import { http, seriesValue, scrapeMetrics } from '@dlock/testing';
import {
  bodies,
  forceState,
  snapshot,
  startPaymentResource,
  write,
  type Harness,
  type Op,
} from './support';

const SLA_MS = 60_000;

/**
 * What the service must answer for one (state, request) pair, written out by
 * hand from the state machine in docs/payment-resource.md, never computed from
 * the transition table under test: a wrong edge in the table must fail here.
 * - a state: 200 and the payout moves there;
 * - 'NO_FUNDS': 422 INSUFFICIENT_FUNDS and the payout moves to FAILED;
 * - 'STALE': 409, a claim whose expectedState no longer holds (whatever the state: a
 *   worker that read the payout before another moved it on lost a race), counted in
 *   payout_stale_claims_total{state}, not as an invalid transition;
 * - absent: 409, an unlisted pair, counted in payout_invalid_transition_total.
 */
type Answer = PayoutState | 'NO_FUNDS' | 'STALE';

/** Every request that can move a payout, and the pairs it is allowed on. */
interface Request {
  name: string;
  op: Op;
  body: unknown;
  insufficientFunds?: boolean;
  ambiguousAgoMs?: number;
  answers: Partial<Record<PayoutState, Answer>>;
}

/** A claim expecting `expected` finds any other state stale. */
function staleClaim(expected: PayoutState): Partial<Record<PayoutState, Answer>> {
  return Object.fromEntries(
    PAYOUT_STATES.filter((s) => s !== expected).map((s) => [s, 'STALE' as const]),
  );
}

const REQUESTS: Request[] = [
  {
    name: 'claim expecting PENDING',
    op: 'claim',
    body: bodies.claim('PENDING'),
    answers: { ...staleClaim('PENDING'), PENDING: 'CLAIMED' },
  },
  {
    name: 'claim expecting CLAIMED (recovery)',
    op: 'claim',
    body: bodies.claim('CLAIMED'),
    answers: { ...staleClaim('CLAIMED'), CLAIMED: 'CLAIMED' },
  },
  {
    name: 'claim without funds',
    op: 'claim',
    body: bodies.claim('PENDING'),
    insufficientFunds: true,
    answers: { ...staleClaim('PENDING'), PENDING: 'NO_FUNDS' },
  },
  {
    name: 'P6 SUBMITTED',
    op: 'rail-outcome',
    body: bodies.submitted(),
    answers: { CLAIMED: 'RAIL_SUBMITTED', RAIL_SUBMITTED: 'RAIL_SUBMITTED' },
  },
  {
    name: 'P6 ACKED',
    op: 'rail-outcome',
    body: bodies.acked(),
    answers: { RAIL_SUBMITTED: 'RAIL_ACKED' },
  },
  {
    name: 'P6 REJECTED',
    op: 'rail-outcome',
    body: bodies.rejected(),
    answers: { RAIL_SUBMITTED: 'FAILED' },
  },
  {
    name: 'P6 AMBIGUOUS',
    op: 'rail-outcome',
    body: bodies.ambiguous(),
    answers: { RAIL_SUBMITTED: 'RAIL_AMBIGUOUS' },
  },
  { name: 'P3 post', op: 'post', body: bodies.post(), answers: { RAIL_ACKED: 'POSTED' } },
  {
    name: 'P8 ACKED',
    op: 'resolve',
    body: bodies.resolveAcked(),
    answers: { RAIL_AMBIGUOUS: 'RAIL_ACKED' },
  },
  {
    name: 'P8 NOT_FOUND',
    op: 'resolve',
    body: bodies.resolveNotFound(),
    answers: { RAIL_AMBIGUOUS: 'FAILED' },
  },
  {
    name: 'P7 abandon within the SLA',
    op: 'abandon',
    body: bodies.abandon(),
    ambiguousAgoMs: 0,
    answers: { PENDING: 'ABANDONED' },
  },
  {
    name: 'P7 abandon after the SLA',
    op: 'abandon',
    body: bodies.abandon(),
    ambiguousAgoMs: SLA_MS + 1_000,
    answers: { PENDING: 'ABANDONED', RAIL_AMBIGUOUS: 'ABANDONED' },
  },
];

const CASES = PAYOUT_STATES.flatMap((state) => REQUESTS.map((r) => [state, r.name, r] as const));

describe('payout state machine over HTTP (every state x every request)', () => {
  let h: Harness;
  let token = 100n;
  beforeAll(async () => {
    h = await startPaymentResource({ PAYOUT_AMBIGUOUS_SLA_MS: String(SLA_MS) });
  });
  afterAll(() => h.close());

  it.each(CASES)('%s + %s', async (state, _name, req) => {
    const account = await h.fixtures.createAccount({
      currency: 'EUR',
      openingBalanceMinor: req.insufficientFunds ? 500 : 100_000,
    });
    const payoutId = await h.fixtures.createPayout({ accountId: account, amountMinor: 1_000 });
    await forceState(h.dbUrl, payoutId, state, { ambiguousAgoMs: req.ambiguousAgoMs });
    const answer = req.answers[state];
    const before = await snapshot(h.dbUrl);
    const staleSeries = `payout_stale_claims_total{state="${state}"}`;
    const metricsBefore = await scrapeMetrics(h.base);
    const invalidBefore = seriesValue(metricsBefore, 'payout_invalid_transition_total', 'zero');
    const staleBefore = seriesValue(metricsBefore, staleSeries, 'zero');
    token += 1n;

    const res = await write(h.base, req.op, payoutId, token, req.body);
    const after = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
    const metricsAfter = await scrapeMetrics(h.base);
    const invalidAfter = seriesValue(metricsAfter, 'payout_invalid_transition_total', 'throw');
    // Absent until the first stale claim in that state; the STALE rows prove it is the right name.
    expect(seriesValue(metricsAfter, staleSeries, 'zero')).toBe(
      staleBefore + (answer === 'STALE' ? 1 : 0),
    );

    if (answer === 'NO_FUNDS') {
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('INSUFFICIENT_FUNDS');
      expect(after.state).toBe('FAILED');
      expect(invalidAfter).toBe(invalidBefore);
    } else if (answer !== undefined && answer !== 'STALE') {
      expect(res.status).toBe(200);
      expect(res.body.state).toBe(answer);
      expect(after.state).toBe(answer);
      expect(invalidAfter).toBe(invalidBefore);
    } else {
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        code: 'PAYOUT_NOT_CLAIMABLE',
        message: expect.any(String),
        retrySafe: false,
        details: expect.objectContaining({ payoutId, state }),
        traceId: expect.any(String),
      });
      expect(after.state).toBe(state);
      // An unlisted pair is counted; a claim whose expectation is stale is only refused.
      expect(invalidAfter).toBe(invalidBefore + (answer === 'STALE' ? 0 : 1));
      expect(await snapshot(h.dbUrl)).toEqual(before);
    }
  });
});
