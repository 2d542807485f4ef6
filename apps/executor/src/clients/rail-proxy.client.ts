import type { TokenProvider } from '@dlock/identity';
import {
  DlockError,
  formatFencingToken,
  isRailOutcome,
  parseFencingToken,
  type FencingToken,
  type RailOutcome,
} from '@dlock/lock-api';
import type { ProxyRecord } from '../execution/recovery';
import { submitReadTimeoutMs, SUBMIT_CONNECT_TIMEOUT_MS } from '../execution/lease';
import {
  HOP_BUDGETS,
  JsonPeer,
  PeerProtocolError,
  withHopRetries,
  type CallBudget,
} from '@dlock/http-client';
import { assertToken, idempotencyKeyFor } from './hop-policy';

export interface SubmissionRequest {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
}

/** The 200 of POST /v1/rail/submissions: the rail acknowledged. */
export interface AckedSubmission {
  submissionId: string;
  railReference: string;
  presentedToken: FencingToken;
}

/**
 * Typed client of rail-proxy (C3 §3.5, DECISIONS §4 R2). The submit is never
 * retried, by anyone, for any reason (C3 §3.8): a retry would re-enter the
 * proxy's admission and come back DUPLICATE_SUBMISSION at best.
 */
export class RailProxyClient {
  private readonly hop: JsonPeer;
  private readonly submitBudget: CallBudget;

  constructor(
    baseUrl: string,
    private readonly ownerId: string,
    railReadTimeoutMs: number,
    token?: TokenProvider,
  ) {
    this.hop = new JsonPeer('rail-proxy', baseUrl, { token });
    this.submitBudget = {
      connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
      readTimeoutMs: submitReadTimeoutMs(railReadTimeoutMs),
    };
  }

  /** One presentation attempt. Every failure is thrown as its typed error; 0 retries. */
  async submit(token: FencingToken, payout: SubmissionRequest): Promise<AckedSubmission> {
    assertToken(token);
    const body = await withHopRetries('submit', () =>
      this.hop.call<{
        submissionId: string;
        railReference: string;
        presentedToken: string;
        outcome: string;
      }>({
        method: 'POST',
        path: '/v1/rail/submissions',
        headers: {
          'x-fencing-token': formatFencingToken(token),
          'x-owner-id': this.ownerId,
          'x-idempotency-key': idempotencyKeyFor(payout.payoutId),
        },
        body: {
          payoutId: payout.payoutId,
          accountId: payout.accountId,
          amountMinor: payout.amountMinor,
          currency: payout.currency,
          beneficiaryRef: payout.beneficiaryRef,
        },
        budget: this.submitBudget,
      }),
    );
    if (body.outcome !== 'ACKED' || typeof body.railReference !== 'string') {
      throw new PeerProtocolError(
        this.hop.name,
        'a 200 submission must be ACKED with a reference',
        200,
      );
    }
    return {
      submissionId: body.submissionId,
      railReference: body.railReference,
      presentedToken: parseFencingToken(body.presentedToken, 'presentedToken'),
    };
  }

  /** R2 (advisory): the proxy's records of a payout; none = nothing was ever admitted. */
  async records(payoutId: string): Promise<ProxyRecord[]> {
    try {
      const body = await withHopRetries('advisoryRead', () =>
        this.hop.call<{ submissions: Record<string, unknown>[] }>({
          method: 'GET',
          path: `/v1/rail/submissions/${encodeURIComponent(payoutId)}`,
          budget: HOP_BUDGETS.advisoryRead,
        }),
      );
      return body.submissions.map((s) => this.record(s));
    } catch (err) {
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return [];
      throw err;
    }
  }

  close(): void {
    this.hop.close();
  }

  private record(s: Record<string, unknown>): ProxyRecord {
    const outcome = (s.outcome ?? null) as RailOutcome | null;
    if ((outcome !== null && !isRailOutcome(outcome)) || typeof s.submissionId !== 'string') {
      throw new PeerProtocolError(this.hop.name, 'malformed submission record', 200);
    }
    return {
      submissionId: s.submissionId,
      outcome,
      railReference: typeof s.railReference === 'string' ? s.railReference : null,
      presentedToken: parseFencingToken(s.presentedToken, 'presentedToken'),
    };
  }
}
