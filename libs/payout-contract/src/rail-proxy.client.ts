import { PAYOUT_ERROR_CODES } from './error-codes';
import type { TokenProvider } from '@dlock/identity';
import assert from 'node:assert/strict';
import {
  DlockError,
  formatFencingToken,
  registerErrorCodes,
  type FenceCredential,
  type FencingToken,
} from '@dlock/lock-api';
import { JsonPeer, PeerProtocolError, withHopRetries, type CallBudget } from '@dlock/http-client';
import { BodyReader } from './body-reader';
import { advisoryGet, protectedHeaders, raiseFloor } from './hops';
import type { FloorRaise, RaiseResult } from './hops';
import { assertFence } from './payout-protocol';
import { PAYOUT_INSTRUCTION_HEADER } from './payout-instruction';
import type { RailOutcome } from './payout-types';
import type {
  HighWaterList,
  RailEvidence,
  SubmissionsResponse,
  SubmitRequest,
  SubmitResponse,
} from './wire';
import { railLookupOf } from './rail-lookup.client';

/** R1's acknowledgement as the caller uses it (the token parsed back to a bigint). */
export interface AckedSubmission {
  submissionId: string;
  railReference: string;
  presentedToken: FencingToken;
  /** The proxy's signed receipt: P6 ACKED and P3 carry it (docs/rail.md, "Receipts"). */
  railReceipt: string;
}

/** The proxy's record of one submission as R2 shows it; `outcome` null = unresolved. */
export interface ProxyRecord {
  submissionId: string;
  outcome: RailOutcome | null;
  railReference: string | null;
  presentedToken: FencingToken;
  /** The receipt of an ACKED or REJECTED record; null for every other. */
  railReceipt: string | null;
}

/**
 * Typed client of rail-proxy (docs/rail.md, docs/contract.md R2). The submit is never
 * retried, by anyone, for any reason (docs/contract.md): a retry would re-enter the
 * proxy's admission and come back DUPLICATE_SUBMISSION at best. Its budget is
 * the caller's (the executor's follows the rail's read timeout, lease.rules.ts);
 * a client built without one (the reconciler's) cannot submit.
 */
export class RailProxyClient {
  private readonly hop: JsonPeer;

  constructor(
    baseUrl: string,
    private readonly ownerId: string,
    private readonly submitBudget?: CallBudget,
    token?: TokenProvider,
  ) {
    // Its answers carry the payout codes: known to whoever builds a client, app or test.
    registerErrorCodes(PAYOUT_ERROR_CODES);
    this.hop = new JsonPeer('rail-proxy', baseUrl, { token });
  }

  /**
   * R1: one presentation attempt, under the grant (`handle.fence`) and the
   * instruction payment-resource signed when it recorded RAIL_SUBMITTED
   * (docs/rail.md). Every failure is thrown as its typed error; 0 retries.
   */
  async submit(
    fence: FenceCredential,
    instruction: string,
    payout: SubmitRequest,
    signal?: AbortSignal,
  ): Promise<AckedSubmission> {
    assertFence(fence);
    assert.ok(instruction !== '', 'a payout instruction is required on every submission');
    const budget = this.submitBudget;
    assert.ok(budget, 'this rail-proxy client was built without a submit budget');
    const body: SubmitRequest = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      amountMinor: payout.amountMinor,
      currency: payout.currency,
      beneficiaryRef: payout.beneficiaryRef,
    };
    const answer = await withHopRetries(
      'submit',
      () =>
        this.hop.call<SubmitResponse>({
          method: 'POST',
          path: '/v1/rail/submissions',
          headers: {
            ...protectedHeaders(fence, this.ownerId, payout.payoutId),
            [PAYOUT_INSTRUCTION_HEADER]: instruction,
          },
          body,
          budget,
          signal,
        }),
      signal,
    );
    const r = new BodyReader(this.hop.name, answer);
    if (r.outcome('outcome') !== 'ACKED') {
      throw new PeerProtocolError(this.hop.name, 'a 200 submission must be ACKED', 200);
    }
    return {
      submissionId: r.str('submissionId'),
      railReference: r.str('railReference'),
      presentedToken: r.token('presentedToken'),
      railReceipt: r.str('railReceipt'),
    };
  }

  /** R2 (advisory): the proxy's records of a payout; none = nothing was ever admitted. */
  async records(payoutId: string, signal?: AbortSignal): Promise<ProxyRecord[]> {
    let answer: SubmissionsResponse;
    try {
      const path = `/v1/rail/submissions/${encodeURIComponent(payoutId)}`;
      answer = await advisoryGet<SubmissionsResponse>(this.hop, path, signal);
    } catch (err) {
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return [];
      throw err;
    }
    return new BodyReader(this.hop.name, answer).array('submissions').map((s) => {
      const r = new BodyReader(this.hop.name, s);
      return {
        submissionId: r.str('submissionId'),
        outcome: r.outcome('outcome'),
        railReference: r.strOrNull('railReference'),
        presentedToken: r.token('presentedToken'),
        railReceipt: r.strOrNull('railReceipt'),
      };
    });
  }

  /**
   * R3: the rail's record of the payout as the proxy read it, and the receipt
   * it earns (null: a person must read it). How a RAIL_AMBIGUOUS payout is
   * resolved with evidence payment-resource checks (docs/rail.md, "Receipts").
   */
  async evidence(payoutId: string, signal?: AbortSignal): Promise<RailEvidence> {
    const path = `/v1/rail/submissions/${encodeURIComponent(payoutId)}/evidence`;
    const r = new BodyReader(this.hop.name, await advisoryGet(this.hop, path, signal));
    return {
      payoutId: r.str('payoutId'),
      lookup: railLookupOf(this.hop.name, r.object('lookup')),
      railReceipt: r.strOrNull('railReceipt'),
    };
  }

  /** GET /v1/rail/high-water (advisory): every account's mark, by account id. */
  async highWater(limit: number, signal?: AbortSignal): Promise<HighWaterList> {
    const path = `/v1/rail/high-water?limit=${limit}`;
    const page = new BodyReader(this.hop.name, await advisoryGet(this.hop, path, signal));
    const accounts = page.array('accounts').map((item) => {
      const r = new BodyReader(this.hop.name, item);
      return { accountId: r.str('accountId'), highWater: formatFencingToken(r.token('highWater')) };
    });
    return { accounts, truncated: page.bool('truncated') };
  }

  /** Raises the account's high-water mark to a revocation's floor. */
  raiseHighWaterFloor(raise: FloorRaise, signal?: AbortSignal): Promise<RaiseResult> {
    const path = `/v1/rail/high-water/${encodeURIComponent(raise.accountId)}/floor`;
    return raiseFloor(this.hop, path, this.ownerId, raise, signal);
  }

  close(): void {
    this.hop.close();
  }
}
