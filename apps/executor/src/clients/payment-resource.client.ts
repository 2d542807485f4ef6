import type { TokenProvider } from '@dlock/identity';
import {
  formatFencingToken,
  isPayoutState,
  type FencingToken,
  type PayoutState,
} from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, PeerProtocolError, withHopRetries } from '@dlock/http-client';
import { assertToken, idempotencyKeyFor } from './hop-policy';

/** One P1 item (beneficiaryRef is this project's addition: the submit needs it). */
export interface PayoutSummary {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  state: PayoutState;
  attemptCount: number;
  createdAt: string;
}

/** The fields of P4 the executor uses (advisory: it picks the next write, never decides safety). */
export interface PayoutView {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  state: PayoutState;
  submissionId: string | null;
  railReference: string | null;
}

export type RailOutcomeRecord =
  | { outcome: 'SUBMITTED' }
  | { outcome: 'ACKED'; submissionId: string; railReference: string }
  | { outcome: 'REJECTED'; submissionId?: string; reason?: string }
  | { outcome: 'AMBIGUOUS'; submissionId?: string; reason?: string };

export interface TransitionResult {
  payoutId: string;
  state: PayoutState;
}

function state(hop: string, value: unknown): PayoutState {
  if (!isPayoutState(value))
    throw new PeerProtocolError(hop, `unknown payout state ${String(value)}`, 200);
  return value;
}

/**
 * Typed client of payment-resource (C3 §3.4, DECISIONS §4). Every mutating
 * method takes the grant's token as a required `bigint` and sends it as
 * X-Fencing-Token, with X-Owner-Id and the payout's stable X-Idempotency-Key.
 */
export class PaymentResourceClient {
  private readonly hop: JsonPeer;

  constructor(
    baseUrl: string,
    private readonly ownerId: string,
    token?: TokenProvider,
  ) {
    this.hop = new JsonPeer('payment-resource', baseUrl, { token });
  }

  /** P1 (advisory). */
  async list(
    payoutState: PayoutState,
    opts: { limit: number; accountId?: string },
  ): Promise<PayoutSummary[]> {
    const query = new URLSearchParams({ state: payoutState, limit: String(opts.limit) });
    if (opts.accountId !== undefined) query.set('accountId', opts.accountId);
    const body = await withHopRetries('advisoryRead', () =>
      this.hop.call<{ items: PayoutSummary[] }>({
        method: 'GET',
        path: `/v1/payouts?${query.toString()}`,
        budget: HOP_BUDGETS.advisoryRead,
      }),
    );
    return body.items.map((item) => ({ ...item, state: state(this.hop.name, item.state) }));
  }

  /** P4 (advisory): the re-read after acquire when the poll's state is not enough (FR-14). */
  async get(payoutId: string): Promise<PayoutView> {
    const body = await withHopRetries('advisoryRead', () =>
      this.hop.call<PayoutView>({
        method: 'GET',
        path: `/v1/payouts/${encodeURIComponent(payoutId)}`,
        budget: HOP_BUDGETS.advisoryRead,
      }),
    );
    return {
      payoutId: body.payoutId,
      accountId: body.accountId,
      amountMinor: body.amountMinor,
      currency: body.currency,
      beneficiaryRef: body.beneficiaryRef,
      state: state(this.hop.name, body.state),
      submissionId: body.submissionId ?? null,
      railReference: body.railReference ?? null,
    };
  }

  /** P2: fenced claim; `expectedState` CLAIMED is the recovery re-claim. */
  claim(
    payoutId: string,
    token: FencingToken,
    expectedState: 'PENDING' | 'CLAIMED',
  ): Promise<TransitionResult> {
    assertToken(token);
    return this.write(payoutId, 'claim', token, { expectedState });
  }

  /** P6: the payout's rail transitions (RAIL_SUBMITTED before the proxy call, the outcome after). */
  railOutcome(
    payoutId: string,
    token: FencingToken,
    record: RailOutcomeRecord,
  ): Promise<TransitionResult> {
    assertToken(token);
    return this.write(payoutId, 'rail-outcome', token, record);
  }

  /** P3: both ledger legs and the balance, from RAIL_ACKED to POSTED. */
  post(
    payoutId: string,
    token: FencingToken,
    ack: { submissionId: string; railReference: string },
  ): Promise<TransitionResult> {
    assertToken(token);
    return this.write(payoutId, 'post', token, {
      railReference: ack.railReference,
      submissionId: ack.submissionId,
      railOutcome: 'ACKED',
    });
  }

  close(): void {
    this.hop.close();
  }

  private async write(
    payoutId: string,
    operation: 'claim' | 'rail-outcome' | 'post',
    token: FencingToken,
    body: object,
  ): Promise<TransitionResult> {
    const result = await withHopRetries('fencedWrite', () =>
      this.hop.call<{ payoutId: string; state: unknown }>({
        method: 'POST',
        path: `/v1/payouts/${encodeURIComponent(payoutId)}/${operation}`,
        headers: {
          'x-fencing-token': formatFencingToken(token),
          'x-owner-id': this.ownerId,
          'x-idempotency-key': idempotencyKeyFor(payoutId),
        },
        body,
        budget: HOP_BUDGETS.fencedWrite,
      }),
    );
    return { payoutId: result.payoutId, state: state(this.hop.name, result.state) };
  }
}
