import { Injectable, Logger } from '@nestjs/common';
import { DlockError } from '@dlock/lock-api';
import {
  payoutLockKey,
  type AbandonResponse,
  type ResolveRequest,
  type TransitionResult,
} from '@dlock/payout-contract';
import { ConsolePeers } from '../../console-peers.client';
import type { Actor } from '../../sessions/service/session-store.service';
import {
  isRevocationRequest,
  PendingRevocations,
  type RevocationRequestAnswer,
} from './revocation-requests.service';

/** The lock-server's L8 answer, as it comes. */
export interface RevokeAnswer {
  revokedToken: string;
  newTokenFloor: string;
  revocationId: string;
}

/** A second operator's approval: the revoke's answer and the request it was. */
export type ApprovalAnswer = RevokeAnswer & { requestId: string };

/** Approval refusals after which the request can never be approved: off the page. */
const FINAL_REFUSALS: ReadonlySet<string> = new Set([
  'NOT_FOUND',
  'REVOCATION_ALREADY_APPROVED',
  'REVOCATION_REQUEST_EXPIRED',
  'FENCED_OUT',
]);

/**
 * The break-glass actions, each one call to the service that owns the rule
 * (docs/operations.md), taken as the person signed in: their token goes with
 * the console's in X-Acting-For, so the policy, the owner checks and the audit
 * records see them (docs/security.md, "Acting for a person"). The console
 * checks nothing the service checks: a refusal is the service's own error,
 * passed on to the page as it came.
 */
@Injectable()
export class ActionsService {
  private readonly logger = new Logger('actions');

  constructor(
    private readonly peers: ConsolePeers,
    private readonly pending: PendingRevocations,
  ) {}

  /**
   * L8, and the key it was for (the lock-server's answer does not repeat it).
   * Under a two-person policy the answer is a request a different person
   * approves; the page lists it until then.
   */
  async revoke(
    actor: Actor,
    key: string,
    reason: string,
    expectedToken?: string,
  ): Promise<(RevokeAnswer & { key: string }) | RevocationRequestAnswer> {
    const body = {
      operator: actor.subject,
      reason,
      ...(expectedToken === undefined ? {} : { expectedToken }),
    };
    const answer = await this.peers.post<RevokeAnswer | RevocationRequestAnswer>(
      'lock-server',
      `/v1/locks/${encodeURIComponent(key)}/revoke`,
      body,
      actor,
    );
    if (isRevocationRequest(answer)) {
      this.pending.add(answer);
      this.logger.log(
        { event: 'console_revoke_requested', key, requestId: answer.requestId, by: actor.subject },
        'revoke requested',
      );
      return answer;
    }
    this.logger.log({ event: 'console_revoke', key, by: actor.subject }, 'lock revoked');
    return { key, ...answer };
  }

  /** The second person's approval of a request: the revoke happens now (or the refusal says why not). */
  async approve(
    actor: Actor,
    requestId: string,
  ): Promise<ApprovalAnswer & { approvedBy: string; key?: string; requestedBy?: string }> {
    const request = this.pending.get(requestId);
    try {
      const answer = await this.peers.post<ApprovalAnswer>(
        'lock-server',
        `/v1/revocations/${encodeURIComponent(requestId)}/approve`,
        undefined,
        actor,
      );
      this.pending.remove(requestId);
      this.logger.log(
        { event: 'console_revoke_approved', requestId, by: actor.subject },
        'revoke approved',
      );
      const asked = request ? { key: request.key, requestedBy: request.requestedBy } : {};
      return { ...asked, approvedBy: actor.subject, ...answer };
    } catch (err) {
      if (err instanceof DlockError && FINAL_REFUSALS.has(err.code)) this.pending.remove(requestId);
      throw err;
    }
  }

  abandon(actor: Actor, payoutId: string, reason: string): Promise<AbandonResponse> {
    return this.peers.post<AbandonResponse>(
      'payment-resource',
      `/v1/payouts/${encodeURIComponent(payoutId)}/abandon`,
      { operator: actor.subject, reason },
      actor,
    );
  }

  /**
   * P8 as every writer does it: the account's lock, its token passed
   * explicitly, released in finally (docs/operations.md). An ACKED verdict
   * leaves the posting to the next executor, which picks up RAIL_ACKED.
   * The lock and the write are the person's own.
   */
  async resolve(
    actor: Actor,
    payoutId: string,
    verdict: ResolveRequest,
  ): Promise<TransitionResult> {
    const { payments, locks, close } = this.peers.actingFor(actor);
    try {
      const signal = AbortSignal.timeout(this.peers.budget.readTimeoutMs * 4);
      const payout = await payments.get(payoutId, signal);
      // P8 moves a payout only on the proxy's receipt of the rail's record (docs/rail.md, "Receipts").
      const { railReceipt } = await this.peers.rail.evidence(payoutId, signal);
      if (railReceipt === null) {
        throw new DlockError(
          'PROOF_REJECTED',
          'the rail’s record of this payout earns no receipt (several or differing transfers): read it, then abandon',
          { details: { proof: 'receipt', reason: 'missing', payoutId } },
        );
      }
      const session = await locks.openSession({ signal });
      try {
        const handle = await session.acquire(payoutLockKey(payout.accountId), { signal });
        try {
          handle.checkStillHeld();
          return await payments.resolve(
            payoutId,
            handle.fence,
            verdict,
            railReceipt,
            handle.signal,
          );
        } finally {
          await handle.release();
        }
      } finally {
        await session.close();
      }
    } finally {
      close();
    }
  }
}
