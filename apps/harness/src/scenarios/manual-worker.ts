import { testTokenProvider } from '@dlock/testing';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import { httpJson, type HttpResult } from '../infra/http';
import type { DlockSystem } from '../system';

/**
 * An in-process worker the harness drives step by step through the critical
 * section of flow A, so a scenario can stop between two writes (UC-02, UC-06)
 * or present an old token on purpose (the stale write of UC-03). It talks to
 * the same services over the same HTTP contract as the executor, and its
 * lock traffic passes the recorder like every other client.
 */
export class ManualWorker {
  readonly client: LockClient;
  session: LockSession | null = null;

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
  }

  async open(): Promise<LockSession> {
    this.session = await this.client.openSession();
    return this.session;
  }

  tryAcquire(accountId: string, waitMs = 0, ttlMs?: number): Promise<LockHandle | null> {
    if (!this.session) throw new Error('open() first');
    return this.session.tryAcquire(`${this.sys.lockKeyPrefix}${accountId}`, { waitMs, ttlMs });
  }

  acquire(accountId: string): Promise<LockHandle> {
    if (!this.session) throw new Error('open() first');
    return this.session.acquire(`${this.sys.lockKeyPrefix}${accountId}`);
  }

  async close(): Promise<void> {
    await this.session?.close();
  }

  private headers(token: bigint, payoutId: string): Record<string, string> {
    return {
      'x-fencing-token': token.toString(),
      'x-owner-id': this.ownerId,
      'x-idempotency-key': `harness-${payoutId}`,
    };
  }

  claim(
    payoutId: string,
    token: bigint,
    expectedState: 'PENDING' | 'CLAIMED' = 'PENDING',
  ): Promise<HttpResult> {
    return httpJson('POST', `${this.sys.payment.url}/v1/payouts/${payoutId}/claim`, {
      headers: this.headers(token, payoutId),
      body: { expectedState },
    });
  }

  railOutcome(payoutId: string, token: bigint, body: Record<string, string>): Promise<HttpResult> {
    return httpJson('POST', `${this.sys.payment.url}/v1/payouts/${payoutId}/rail-outcome`, {
      headers: this.headers(token, payoutId),
      body,
    });
  }

  async submit(payoutId: string, token: bigint): Promise<HttpResult> {
    const view = await httpJson('GET', `${this.sys.payment.url}/v1/payouts/${payoutId}`);
    const p = view.body as Record<string, unknown>;
    return httpJson('POST', `${this.sys.railProxy.url}/v1/rail/submissions`, {
      headers: this.headers(token, payoutId),
      body: {
        payoutId,
        accountId: p.accountId,
        amountMinor: p.amountMinor,
        currency: p.currency,
        beneficiaryRef: p.beneficiaryRef ?? `ben-${payoutId.slice(0, 8)}`,
      },
      timeoutMs: this.sys.timing.railReadTimeoutMs + 3_000,
    });
  }

  post(
    payoutId: string,
    token: bigint,
    submissionId: string,
    railReference: string,
  ): Promise<HttpResult> {
    return httpJson('POST', `${this.sys.payment.url}/v1/payouts/${payoutId}/post`, {
      headers: this.headers(token, payoutId),
      body: { railReference, submissionId, railOutcome: 'ACKED' },
    });
  }

  /** Flow A end to end under `token`; returns the final answer (POSTED on success). */
  async runFlowA(payoutId: string, token: bigint): Promise<HttpResult> {
    const claim = await this.claim(payoutId, token);
    if (claim.status !== 200) return claim;
    const marked = await this.railOutcome(payoutId, token, { outcome: 'SUBMITTED' });
    if (marked.status !== 200) return marked;
    const ack = await this.submit(payoutId, token);
    if (ack.status !== 200) return ack;
    const { submissionId, railReference } = ack.body as {
      submissionId: string;
      railReference: string;
    };
    const acked = await this.railOutcome(payoutId, token, {
      outcome: 'ACKED',
      submissionId,
      railReference,
    });
    if (acked.status !== 200) return acked;
    return this.post(payoutId, token, submissionId, railReference);
  }
}
