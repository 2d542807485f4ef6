import type { FenceCredential } from '@dlock/lock-api';
import {
  idempotencyKeyFor,
  railClientRef,
  type AckedSubmission,
  type PayoutRecord,
  type PayoutState,
  type ProxyRecord,
  type RailOutcomeRecord,
  type RailOutcomeRequest,
  type SubmittedResult,
  type SubmitRequest,
  type TransitionResult,
} from '@dlock/payout-contract';
import type { SubmissionRecord } from '../../../rail-proxy/src/submission/domain/submission.types';
import type { PgliteGuards } from './pglite-guards.sim';
import { simReceiptOf, type SimRail } from './proxy-node.sim';
import type { SimProcess } from './scheduler.sim';
import { railAnswer, SimPaymentResource, SimRailProxy } from './clients.sim';
import type { World } from './worker.sim';

/**
 * payment-resource's client (clients.sim.ts), answered by the real service
 * (payment-node.sim.ts: PayoutCommands on paydb's SQL in PGlite) with the
 * headers the real client sends.
 */
export class PglitePaymentResource extends SimPaymentResource {
  constructor(
    w: World,
    private readonly g: PgliteGuards,
    proc: SimProcess,
  ) {
    super(w, proc);
  }

  /** After each request the workers' view of the payouts' states is refreshed. */
  private call<T>(kind: 'advisoryRead' | 'fencedWrite', fn: () => Promise<T>): Promise<T> {
    return this.exchange(kind, async () => {
      try {
        return await fn();
      } finally {
        await this.g.payment.refresh();
      }
    });
  }

  private grant(payoutId: string, fence: FenceCredential) {
    const key = idempotencyKeyFor(payoutId);
    return this.g.payment.grant(payoutId, fence, this.proc.name, key);
  }

  override get(payoutId: string): Promise<PayoutRecord> {
    return this.call(
      'advisoryRead',
      async () => (await this.g.payment.queries.get(payoutId)) as PayoutRecord,
    );
  }

  override claim(
    payoutId: string,
    fence: FenceCredential,
    expectedState: 'PENDING' | 'CLAIMED',
  ): Promise<TransitionResult> {
    return this.call('fencedWrite', () =>
      this.g.payment.commands.claim(payoutId, this.grant(payoutId, fence), { expectedState }),
    ).then(transitionOf);
  }

  override markSubmitted(payoutId: string, fence: FenceCredential): Promise<SubmittedResult> {
    return this.call('fencedWrite', () =>
      this.g.payment.commands.railOutcome(
        payoutId,
        this.grant(payoutId, fence),
        { outcome: 'SUBMITTED' },
        undefined,
      ),
    ).then((r) => ({ ...transitionOf(r), railInstruction: r.railInstruction! }));
  }

  override railOutcome(
    payoutId: string,
    fence: FenceCredential,
    record: Exclude<RailOutcomeRecord, { outcome: 'SUBMITTED' }>,
  ): Promise<TransitionResult> {
    // The body is the contract's fields only; the receipt travels beside it (as the real client does).
    const r = record as RailOutcomeRequest & { railReceipt?: string };
    const body: RailOutcomeRequest = { outcome: r.outcome };
    if (r.submissionId !== undefined) body.submissionId = r.submissionId;
    if (r.railReference !== undefined) body.railReference = r.railReference;
    if (r.reason !== undefined) body.reason = r.reason;
    return this.call('fencedWrite', () =>
      this.g.payment.commands.railOutcome(
        payoutId,
        this.grant(payoutId, fence),
        body,
        r.railReceipt,
      ),
    ).then(transitionOf);
  }

  override post(
    payoutId: string,
    fence: FenceCredential,
    ack: { submissionId: string; railReference: string; railReceipt: string },
  ): Promise<TransitionResult> {
    const body = { railReference: ack.railReference, submissionId: ack.submissionId } as const;
    return this.call('fencedWrite', () =>
      this.g.payment.commands.post(
        payoutId,
        this.grant(payoutId, fence),
        { ...body, railOutcome: 'ACKED' },
        ack.railReceipt,
      ),
    ).then(transitionOf);
  }
}

function transitionOf(r: { payoutId: string; state: PayoutState }): TransitionResult {
  return { payoutId: r.payoutId, state: r.state };
}

/**
 * rail-proxy's side (clients.sim.ts), answered by the real service
 * (proxy-node.sim.ts: SubmissionService on proxydb's SQL in PGlite), and the
 * rail stub behind it (simRail).
 */
export class PgliteRailProxy extends SimRailProxy {
  constructor(
    w: World,
    private readonly g: PgliteGuards,
    proc: SimProcess,
  ) {
    super(w, proc);
  }

  /**
   * R1 at the proxy, as its controller passes it on. A duplicate of a request
   * still in flight waits for it (the service's own wait polls a wall-clock
   * timer), then gets the stored answer.
   */
  protected async present(
    fence: FenceCredential,
    instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission> {
    const idempotencyKey = idempotencyKeyFor(payout.payoutId);
    const scope = `${idempotencyKey}@${fence.token}`;
    const earlier = this.g.inFlight.get(scope);
    if (earlier) await earlier.catch(() => undefined);
    const answer = this.g.proxy.service.submit({
      ...payout,
      presentedToken: fence.token,
      grantProof: fence.proof,
      instruction,
      ownerId: this.proc.name,
      idempotencyKey,
      clientRef: railClientRef(payout.payoutId),
      traceId: payout.payoutId,
    });
    this.g.inFlight.set(scope, answer);
    const r = await answer;
    return {
      submissionId: r.submissionId,
      railReference: r.railReference,
      presentedToken: BigInt(r.presentedToken),
      railReceipt: r.railReceipt,
    };
  }

  protected async proxyRecords(payoutId: string): Promise<ProxyRecord[]> {
    return (await this.g.proxy.service.recordsOf(payoutId)).map(proxyRecordOf);
  }
}

function proxyRecordOf(r: SubmissionRecord): ProxyRecord {
  const { submissionId, outcome, railReference, presentedToken } = r;
  return { submissionId, outcome, railReference, presentedToken, railReceipt: simReceiptOf(r) };
}

/** The rail stub (railAnswer) behind the real proxy; what it was shown, and under which token, goes to the rail's journal. */
export function simRail(w: World, g: PgliteGuards): SimRail {
  return async (transfer) => {
    const payoutId = transfer.clientRef.replace(/^po-/, '');
    const live = (await g.proxy.service.recordsOf(payoutId)).find((r) => r.outcome === null);
    w.rail.presentations.push({
      at: w.sched.now,
      accountId: live!.accountId,
      payoutId,
      token: live!.presentedToken,
    });
    return (await railAnswer(w, payoutId)) === 'ambiguous'
      ? ({ kind: 'ambiguous', reason: 'read-timeout' } as const)
      : ({ kind: 'acked', railReference: `rail-${payoutId}` } as const);
  };
}
