import { PAYOUT_STATES, type PayoutState } from '@dlock/lock-api';
import { http } from '@dlock/testing';
import { transition, type PayoutEvent } from '../src/domain/transition-table';
import {
  bodies,
  forceState,
  metricValue,
  metricsText,
  snapshot,
  startPaymentResource,
  write,
  type Harness,
  type Op,
} from './support';

const SLA_MS = 60_000;

/** Every request that can move a payout, and the event the service raises for it. */
interface Request {
  name: string;
  op: Op;
  body: unknown;
  insufficientFunds?: boolean;
  ambiguousAgoMs?: number;
  expectedState?: 'PENDING' | 'CLAIMED';
  event(state: PayoutState): PayoutEvent;
}

const REQUESTS: Request[] = [
  {
    name: 'claim expecting PENDING',
    op: 'claim',
    body: bodies.claim('PENDING'),
    expectedState: 'PENDING',
    event: () => 'CLAIM',
  },
  {
    name: 'claim expecting CLAIMED (recovery)',
    op: 'claim',
    body: bodies.claim('CLAIMED'),
    expectedState: 'CLAIMED',
    event: () => 'CLAIM',
  },
  {
    name: 'claim without funds',
    op: 'claim',
    body: bodies.claim('PENDING'),
    expectedState: 'PENDING',
    insufficientFunds: true,
    event: (s) => (s === 'PENDING' ? 'CLAIM_INSUFFICIENT_FUNDS' : 'CLAIM'),
  },
  {
    name: 'P6 SUBMITTED',
    op: 'rail-outcome',
    body: bodies.submitted(),
    event: () => 'RAIL_SUBMITTED',
  },
  { name: 'P6 ACKED', op: 'rail-outcome', body: bodies.acked(), event: () => 'RAIL_ACKED' },
  {
    name: 'P6 REJECTED',
    op: 'rail-outcome',
    body: bodies.rejected(),
    event: () => 'RAIL_REJECTED',
  },
  {
    name: 'P6 AMBIGUOUS',
    op: 'rail-outcome',
    body: bodies.ambiguous(),
    event: () => 'RAIL_AMBIGUOUS',
  },
  { name: 'P3 post', op: 'post', body: bodies.post(), event: () => 'POST' },
  { name: 'P8 ACKED', op: 'resolve', body: bodies.resolveAcked(), event: () => 'RESOLVE_ACKED' },
  {
    name: 'P8 NOT_FOUND',
    op: 'resolve',
    body: bodies.resolveNotFound(),
    event: () => 'RESOLVE_NOT_FOUND',
  },
  {
    name: 'P7 abandon within the SLA',
    op: 'abandon',
    body: bodies.abandon(),
    ambiguousAgoMs: 0,
    event: () => 'ABANDON',
  },
  {
    name: 'P7 abandon after the SLA',
    op: 'abandon',
    body: bodies.abandon(),
    ambiguousAgoMs: SLA_MS + 1_000,
    event: (s) => (s === 'RAIL_AMBIGUOUS' ? 'ABANDON_AFTER_SLA' : 'ABANDON'),
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
    const event = req.event(state);
    const decided = transition(state, event);
    const mismatch = req.expectedState !== undefined && req.expectedState !== state;
    const before = await snapshot(h.dbUrl);
    const invalidBefore = metricValue(await metricsText(h.base), 'payout_invalid_transition_total');
    token += 1n;

    const res = await write(h.base, req.op, payoutId, token, req.body);
    const after = (await http('GET', `${h.base}/v1/payouts/${payoutId}`)).body;
    const invalidAfter = metricValue(await metricsText(h.base), 'payout_invalid_transition_total');

    if (decided.allowed && !mismatch) {
      if (event === 'CLAIM_INSUFFICIENT_FUNDS') {
        expect(res.status).toBe(422);
        expect(res.body.code).toBe('INSUFFICIENT_FUNDS');
      } else {
        expect(res.status).toBe(200);
        expect(res.body.state).toBe(decided.to);
      }
      expect(after.state).toBe(decided.to);
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
      expect(invalidAfter).toBe(invalidBefore + (decided.allowed ? 0 : 1));
      expect(await snapshot(h.dbUrl)).toEqual(before);
    }
  });
});
