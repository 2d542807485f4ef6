import type { FenceCredential } from '@dlock/lock-api';
import { testTokenProvider } from '@dlock/testing';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import {
  PaymentResourceClient,
  RailProxyClient,
  payoutLockKey,
  type AckedSubmission,
  type PayoutRecord,
  type RailOutcomeRecord,
  type TransitionResult,
} from '@dlock/payout-contract';
import { answerOf, type Answer } from '../infra/http.infra';
import type { DlockSystem } from '../dlock-system.infra';

/**
 * An in-process worker the harness drives step by step through the critical
 * section of flow A, so a scenario can stop between two writes (UC-02, UC-06)
 * or present an old token on purpose (the stale write of UC-03). It talks to
 * the same services with the executor's own clients (@dlock/payout-contract),
 * and its lock traffic passes the recorder like every other client. A refusal
 * comes back as an Answer the scenario records.
 */
export class ManualWorker {
  readonly client: LockClient;
  session: LockSession | null = null;
  private readonly payments: PaymentResourceClient;
  private readonly rail: RailProxyClient;

  constructor(
    private readonly sys: DlockSystem,
    readonly ownerId: string,
  ) {
    this.client = new LockClient({
      baseUrl: sys.lockNet.url,
      ownerId,
      token: testTokenProvider(ownerId),
      sessionTtlMs: sys.timing.sessionTtlMs,
      lockTtlMs: sys.timing.lockTtlMs,
      safetyMargin: sys.timing.safetyMargin,
    });
    this.payments = new PaymentResourceClient(
      sys.payment.url,
      ownerId,
      testTokenProvider(ownerId, 'payment-resource'),
    );
    // The executor's submit budget shape (connect, rail read + slack), with a wider slack.
    this.rail = new RailProxyClient(
      sys.railProxy.url,
      ownerId,
      {
        connectTimeoutMs: 1_000,
        readTimeoutMs: sys.timing.railReadTimeoutMs + 3_000,
      },
      testTokenProvider(ownerId, 'rail-proxy'),
    );
  }

  async open(): Promise<LockSession> {
    this.session = await this.client.openSession();
    return this.session;
  }

  tryAcquire(accountId: string, waitMs = 0, ttlMs?: number): Promise<LockHandle | null> {
    if (!this.session) throw new Error('open() first');
    return this.session.tryAcquire(payoutLockKey(accountId), { waitMs, ttlMs });
  }

  acquire(accountId: string): Promise<LockHandle> {
    if (!this.session) throw new Error('open() first');
    return this.session.acquire(payoutLockKey(accountId));
  }

  async close(): Promise<void> {
    this.payments.close();
    this.rail.close();
    await this.session?.close();
  }

  /** P4, advisory. */
  get(payoutId: string): Promise<Answer<PayoutRecord>> {
    return answerOf(this.payments.get(payoutId));
  }

  claim(
    payoutId: string,
    fence: FenceCredential,
    expectedState: 'PENDING' | 'CLAIMED' = 'PENDING',
  ): Promise<Answer<TransitionResult>> {
    return answerOf(this.payments.claim(payoutId, fence, expectedState));
  }

  /** P6 SUBMITTED; its answer carries the instruction a submit presents. */
  markSubmitted(
    payoutId: string,
    fence: FenceCredential,
  ): Promise<Answer<TransitionResult & { railInstruction?: string }>> {
    return answerOf(this.payments.markSubmitted(payoutId, fence));
  }

  railOutcome(
    payoutId: string,
    fence: FenceCredential,
    record: Exclude<RailOutcomeRecord, { outcome: 'SUBMITTED' }>,
  ): Promise<Answer<TransitionResult>> {
    return answerOf(this.payments.railOutcome(payoutId, fence, record));
  }

  /** R1 with the payout as P4 shows it, under `instruction` (from markSubmitted). */
  submit(
    payoutId: string,
    fence: FenceCredential,
    instruction: string,
  ): Promise<Answer<AckedSubmission>> {
    return answerOf(this.submitted(payoutId, fence, instruction));
  }

  /** Flow A end to end under `fence`; the first refusal, or the POSTED answer. */
  runFlowA(payoutId: string, fence: FenceCredential): Promise<Answer<TransitionResult>> {
    return answerOf(this.flowA(payoutId, fence));
  }

  private async flowA(payoutId: string, fence: FenceCredential): Promise<TransitionResult> {
    await this.payments.claim(payoutId, fence, 'PENDING');
    const marked = await this.payments.markSubmitted(payoutId, fence);
    const ack = await this.submitted(payoutId, fence, marked.railInstruction);
    await this.payments.railOutcome(payoutId, fence, { outcome: 'ACKED', ...ack });
    return this.payments.post(payoutId, fence, ack);
  }

  private async submitted(
    payoutId: string,
    fence: FenceCredential,
    instruction: string,
  ): Promise<AckedSubmission> {
    const p = await this.payments.get(payoutId);
    return this.rail.submit(fence, instruction, {
      payoutId,
      accountId: p.accountId,
      amountMinor: p.amountMinor,
      currency: p.currency,
      beneficiaryRef: p.beneficiaryRef,
    });
  }
}
