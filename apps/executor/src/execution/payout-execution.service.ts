import { Inject, Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DlockError, formatFencingToken, type FencingToken } from '@dlock/lock-api';
import type { LockHandle, LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import { EXECUTOR_CONFIG, type CrashPoint, type ExecutorConfig } from '../config';
import { PeerUnavailableError } from '@dlock/http-client';
import {
  PaymentResourceClient,
  RailProxyClient,
  type PayoutSummary,
  type PayoutView,
} from '@dlock/payout-contract';
import { ExecutorMetrics, type InvalidHop, type Step } from '../metrics';
import { attemptLabel, executeLabel, type AttemptResult } from './execution-outcome';
import { grantedTtlMs, leaseCoversSubmit, leaseDeadlineMs } from './lease';
import { decideFromRecords, nextStepFor } from './recovery';

/** Everything one attempt needs; the token is captured once from the handle and never re-read. */
interface Attempt {
  readonly payoutId: string;
  readonly accountId: string;
  readonly handle: LockHandle;
  readonly token: FencingToken;
  /** Local deadline of this lock's own lease (monotonic ms), see lease.ts. */
  readonly leaseDeadlineMs: number;
  readonly stop: AbortSignal;
}

export function lockKeyFor(accountId: string): string {
  return `payout:${accountId}`;
}

/** Payouts remembered as refused by payment-resource; oldest forgotten first. */
const REFUSED_REMEMBERED_MAX = 10_000;

/** A downstream refused the request's content (400 VALIDATION_FAILED): resending it cannot help. */
function isRefusedAsInvalid(err: unknown): err is DlockError {
  return err instanceof DlockError && err.code === 'VALIDATION_FAILED' && err.httpStatus === 400;
}

/** The refused field names, for the failure reason (no values: they may be ids). */
function fieldsOf(err: DlockError): string {
  const fields = err.details?.fields;
  if (!Array.isArray(fields)) return 'VALIDATION_FAILED';
  const names = fields.map((f: unknown) => {
    const name = typeof f === 'object' && f !== null ? (f as { field?: unknown }).field : null;
    return typeof name === 'string' ? name : '?';
  });
  return `VALIDATION_FAILED: ${names.join(', ')}`.slice(0, 200);
}

/** payment-resource refused one of this attempt's requests as invalid; carries the step. */
class RefusedByPaymentResource extends Error {
  constructor(
    readonly step: Step,
    readonly refusal: DlockError,
  ) {
    super(`payment-resource refused ${step} as invalid: ${refusal.message}`, { cause: refusal });
  }
}

/**
 * The payout state machine of the executor (T-025 §4, 03 §3.4 flows A and D,
 * 02 §2.3): one method per transition, in a fixed order, no hidden retries.
 * acquire → claim (P2) → RAIL_SUBMITTED (P6) → submit → outcome (P6) → post
 * (P3) → release, the release in `finally` on every branch. A payout a dead
 * worker left half-way resumes from its state (recovery by state).
 */
@Injectable()
export class PayoutExecutionService {
  private readonly logger = new Logger('payout-execution');
  /** Payouts payment-resource refused as invalid before anything settled them: not retried by this process. */
  private readonly refused = new Set<string>();

  constructor(
    @Inject(EXECUTOR_CONFIG) private readonly config: ExecutorConfig,
    private readonly payments: PaymentResourceClient,
    private readonly rail: RailProxyClient,
    private readonly metrics: ExecutorMetrics,
    private readonly safety: SafetyEvents,
  ) {}

  /**
   * One attempt at one payout under a fresh lock. Errors from the acquire
   * itself (lock-server unreachable, session lost) are thrown: the caller
   * stops dispatching, and no payout proceeds (fail closed).
   */
  async execute(
    session: LockSession,
    payout: PayoutSummary,
    stop: AbortSignal,
  ): Promise<AttemptResult> {
    const startedMs = performance.now();
    // Taken before the first try: after retries the lease is under-estimated, never over-estimated.
    const acquireSentAtMs = performance.now();
    const handle = await this.acquire(session, payout.accountId, stop);
    if (handle === 'contended') {
      this.logger.debug({ payoutId: payout.payoutId }, 'account lock contended; skipped');
      return this.done({ kind: 'contended', payoutId: payout.payoutId }, startedMs);
    }
    if (handle === 'stopped') {
      return this.done(
        { kind: 'abandoned', payoutId: payout.payoutId, reason: 'shutting-down' },
        startedMs,
      );
    }
    const attempt: Attempt = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      handle,
      token: handle.fencingToken,
      leaseDeadlineMs: leaseDeadlineMs(
        acquireSentAtMs,
        grantedTtlMs(handle.ttlMs, handle.acquiredAt, handle.expiresAt),
        this.config.LOCK_CLIENT_SAFETY_MARGIN,
      ),
      stop,
    };
    let result: AttemptResult;
    try {
      result =
        payout.state === 'PENDING'
          ? await this.claimPolled(attempt, payout)
          : await this.fromState(attempt);
    } catch (err) {
      result = this.gaveUp(attempt, err);
    } finally {
      // Every branch, ambiguity included: a lease over a finished or quarantined payout blocks the account for nothing.
      await this.metrics.step('release', () => handle.release());
    }
    return this.done(result, startedMs);
  }

  /** True for a payout payment-resource refused as invalid in this process: the poll leaves it alone. */
  wasRefusedAsInvalid(payoutId: string): boolean {
    return this.refused.has(payoutId);
  }

  /**
   * L4 under the SDK's fixed budget (retry-policy.ts, C3 §3.8): up to five
   * tries with full-jitter backoff. A key still held after the last one
   * (CONTENTION_EXCEEDED) ends the attempt before any side effect. Other
   * failures are thrown: the caller stops the lane (fail closed).
   */
  private async acquire(
    session: LockSession,
    accountId: string,
    stop: AbortSignal,
  ): Promise<LockHandle | 'contended' | 'stopped'> {
    try {
      return await this.metrics.step('acquire', () =>
        session.acquire(lockKeyFor(accountId), { signal: stop }),
      );
    } catch (err) {
      if (err instanceof DlockError && err.code === 'CONTENTION_EXCEEDED') return 'contended';
      if (stop.aborted) return 'stopped';
      throw err;
    }
  }

  /**
   * A payout polled as PENDING is claimed at once (T-025's order has no read
   * between acquire and claim). Amount, currency and beneficiary never change;
   * the state might have, and the claim's expectedState checks it under the
   * row lock, which is the re-read of FR-14 without its race. Only a claim
   * that finds another state costs the P4 read, and recovery goes by state.
   */
  private async claimPolled(a: Attempt, payout: PayoutSummary): Promise<AttemptResult> {
    const view: PayoutView = { ...payout, submissionId: null, railReference: null };
    const result = await this.claim(a, view, 'PENDING');
    if (result.kind === 'skipped' && result.reason === 'not-claimable') return this.fromState(a);
    return result;
  }

  /** FR-14: re-read after acquiring; the state picks the next conditional write, the write decides. */
  private async fromState(a: Attempt): Promise<AttemptResult> {
    const view = await this.payment('reread', () => this.payments.get(a.payoutId));
    const next = nextStepFor(view.state);
    switch (next.step) {
      case 'leave':
        return { kind: 'skipped', payoutId: a.payoutId, reason: next.why };
      case 'claim':
        return this.claim(a, view, 'PENDING');
      case 'reclaim':
        return this.claim(a, view, 'CLAIMED');
      case 'resolve-from-record':
        return this.resolveFromRecord(a, view, false);
      case 'post':
        if (view.submissionId === null || view.railReference === null) {
          this.logger.error(
            { payoutId: a.payoutId },
            'RAIL_ACKED payout without its rail reference',
          );
          return { kind: 'abandoned', payoutId: a.payoutId, reason: 'acked-without-reference' };
        }
        return this.post(a, { submissionId: view.submissionId, railReference: view.railReference });
    }
  }

  /** P2: PENDING → CLAIMED, or the recovery re-claim CLAIMED → CLAIMED under the newer token. */
  private async claim(
    a: Attempt,
    view: PayoutView,
    expectedState: 'PENDING' | 'CLAIMED',
  ): Promise<AttemptResult> {
    if (a.stop.aborted) return { kind: 'abandoned', payoutId: a.payoutId, reason: 'shutting-down' };
    this.checkStillHeld(a);
    try {
      await this.payment('claim', () => this.payments.claim(a.payoutId, a.token, expectedState));
    } catch (err) {
      if (err instanceof DlockError && err.code === 'PAYOUT_NOT_CLAIMABLE') {
        return { kind: 'skipped', payoutId: a.payoutId, reason: 'not-claimable' };
      }
      if (err instanceof DlockError && err.code === 'INSUFFICIENT_FUNDS') {
        // The claim itself moved the payout to FAILED; it never reaches the rail.
        return { kind: 'failed', payoutId: a.payoutId, reason: 'INSUFFICIENT_FUNDS' };
      }
      throw err;
    }
    this.crashPoint('after-claim');
    return this.markSubmitted(a, view);
  }

  /** P6 SUBMITTED: CLAIMED → RAIL_SUBMITTED, recorded before anything reaches the proxy. */
  private async markSubmitted(a: Attempt, view: PayoutView): Promise<AttemptResult> {
    if (a.stop.aborted) return { kind: 'abandoned', payoutId: a.payoutId, reason: 'shutting-down' };
    // Checked here too, so a payout whose lease is already short stays CLAIMED rather than half-way.
    const early = this.leaseShort(a);
    if (early) return early;
    this.checkStillHeld(a);
    await this.payment('mark_submitted', () =>
      this.payments.railOutcome(a.payoutId, a.token, { outcome: 'SUBMITTED' }),
    );
    this.crashPoint('after-submitted');
    return this.submit(a, view);
  }

  /** The one side effect nothing can roll back: exactly one presentation, never retried. */
  private async submit(a: Attempt, view: PayoutView): Promise<AttemptResult> {
    if (this.config.DLOCK_HARNESS && this.config.EXECUTOR_PAUSE_BEFORE_SUBMIT_MS > 0) {
      await sleep(this.config.EXECUTOR_PAUSE_BEFORE_SUBMIT_MS);
    }
    if (a.stop.aborted) return { kind: 'abandoned', payoutId: a.payoutId, reason: 'shutting-down' };
    const short = this.leaseShort(a);
    if (short) return short;
    this.checkStillHeld(a);
    let ack;
    try {
      ack = await this.metrics.step('submit', () =>
        this.rail.submit(a.token, {
          payoutId: a.payoutId,
          accountId: view.accountId,
          amountMinor: view.amountMinor,
          currency: view.currency,
          beneficiaryRef: view.beneficiaryRef,
        }),
      );
    } catch (err) {
      return this.submitFailed(a, view, err);
    }
    this.crashPoint('after-submit');
    const quarantined = await this.recordAcked(a, ack);
    if (quarantined) return quarantined;
    this.crashPoint('after-ack');
    return this.post(a, ack);
  }

  /**
   * P6 ACKED. The rail took the money, so a refusal of this write as invalid
   * cannot end in FAILED: the payout is quarantined (RAIL_AMBIGUOUS) for the
   * reconciler and an operator. Returns null once ACKED is recorded.
   */
  private async recordAcked(
    a: Attempt,
    ack: { submissionId: string; railReference: string },
  ): Promise<AttemptResult | null> {
    this.checkStillHeld(a);
    try {
      await this.payment('record_outcome', () =>
        this.payments.railOutcome(a.payoutId, a.token, {
          outcome: 'ACKED',
          submissionId: ack.submissionId,
          railReference: ack.railReference,
        }),
      );
      return null;
    } catch (err) {
      if (!(err instanceof RefusedByPaymentResource)) throw err;
      this.reportInvalid(a, 'payment_resource', err.step, err.refusal);
      // Without the refused values, so the quarantine write itself is not refused too.
      return this.quarantine(a, undefined, 'payment-resource refused the ACKED outcome as invalid');
    }
  }

  /** The six answers of the proxy other than ACKED (C3 §3.5), and the transport failures. */
  private async submitFailed(a: Attempt, view: PayoutView, err: unknown): Promise<AttemptResult> {
    if (err instanceof PeerUnavailableError) {
      if (err.phase === 'connect') {
        return { kind: 'abandoned', payoutId: a.payoutId, reason: 'proxy-unreachable' };
      }
      // Connected, no answer: the proxy may have presented it. Never resubmitted from here;
      // the payout stays RAIL_SUBMITTED and the next holder resolves it from the proxy's record.
      this.logger.error(
        { payoutId: a.payoutId, err: err.message },
        'submit outcome unknown (no answer from the proxy); left RAIL_SUBMITTED for recovery from the record',
      );
      return { kind: 'abandoned', payoutId: a.payoutId, reason: 'submit-outcome-unknown' };
    }
    if (!(err instanceof DlockError)) throw err;
    const details = err.details ?? {};
    const submissionId =
      typeof details.submissionId === 'string' ? details.submissionId : undefined;
    switch (err.code) {
      case 'RAIL_AMBIGUOUS':
        return this.quarantine(
          a,
          submissionId,
          `proxy: ${typeof details.reason === 'string' ? details.reason : 'timeout'}`,
        );
      case 'VALIDATION_FAILED':
        if (err.httpStatus === 422 && details.outcome === 'REJECTED') {
          return this.recordRejected(
            a,
            submissionId,
            'rail declined the transfer',
            'RAIL_REJECTED',
          );
        }
        if (err.httpStatus === 400) {
          // Refused at the proxy's door, before its admission: nothing was presented (C3 §3.5).
          this.reportInvalid(a, 'rail_proxy', 'submit', err);
          return this.recordRejected(
            a,
            undefined,
            `rail-proxy refused the submission as invalid (${fieldsOf(err)}); nothing was presented to the rail`,
            'INVALID_PAYOUT',
          );
        }
        throw err;
      case 'DUPLICATE_SUBMISSION':
        // A claim/lease boundary defect, not a rail problem: loud, then resolved from the record.
        this.logger.error(
          {
            event: 'executor_duplicate_submission',
            payoutId: a.payoutId,
            presentedToken: formatFencingToken(a.token),
            details,
          },
          'proxy refused a second submission for this payout; resolving from its record',
        );
        return this.resolveFromRecord(a, view, true);
      case 'RAIL_UNAVAILABLE':
        // Nothing was presented (C3 §3.2). The payout stays RAIL_SUBMITTED; a later pass finds no record and submits.
        return { kind: 'abandoned', payoutId: a.payoutId, reason: 'rail-unavailable' };
      default:
        throw err; // FENCED_OUT and the rest: classified by gaveUp()
    }
  }

  /**
   * RAIL_SUBMITTED without a recorded outcome, or a DUPLICATE_SUBMISSION
   * answer: the proxy's record (R2) says what happened (02 §2.3).
   */
  private async resolveFromRecord(
    a: Attempt,
    view: PayoutView,
    afterDuplicate: boolean,
  ): Promise<AttemptResult> {
    const records = await this.metrics.step('proxy_record', () => this.rail.records(a.payoutId));
    const decision = decideFromRecords(records);
    switch (decision.action) {
      case 'submit':
        if (afterDuplicate) {
          this.logger.error({ payoutId: a.payoutId }, 'DUPLICATE_SUBMISSION but no live record');
          return { kind: 'abandoned', payoutId: a.payoutId, reason: 'duplicate-without-record' };
        }
        return this.submit(a, view);
      case 'record-acked': {
        const { submissionId, railReference } = decision.record;
        if (railReference === null) {
          return this.quarantine(a, submissionId, 'acked-record-without-reference');
        }
        const quarantined = await this.recordAcked(a, { submissionId, railReference });
        return quarantined ?? this.post(a, { submissionId, railReference });
      }
      case 'record-rejected':
        return this.recordRejected(
          a,
          decision.record.submissionId,
          'rail declined the transfer',
          'RAIL_REJECTED',
        );
      case 'record-ambiguous':
        return this.quarantine(a, decision.record?.submissionId, `record: ${decision.why}`);
    }
  }

  /**
   * P6 REJECTED: RAIL_SUBMITTED → FAILED, for a rail decline or a submission
   * the proxy refused as invalid. Either way nothing moved; no rail retry.
   */
  private async recordRejected(
    a: Attempt,
    submissionId: string | undefined,
    why: string,
    resultReason: 'RAIL_REJECTED' | 'INVALID_PAYOUT',
  ): Promise<AttemptResult> {
    this.checkStillHeld(a);
    await this.payment('record_outcome', () =>
      this.payments.railOutcome(a.payoutId, a.token, {
        outcome: 'REJECTED',
        ...(submissionId ? { submissionId } : {}),
        reason: why.slice(0, 512),
      }),
    );
    return { kind: 'failed', payoutId: a.payoutId, reason: resultReason };
  }

  /** The `payout_invalid` event: one log line and executor_payout_invalid_total{hop}. */
  private reportInvalid(a: Attempt, hop: InvalidHop, step: Step, refusal: DlockError): void {
    this.metrics.payoutInvalidTotal.inc({ hop });
    this.logger.error(
      {
        event: 'payout_invalid',
        payoutId: a.payoutId,
        accountId: a.accountId,
        hop,
        step,
        fields: refusal.details?.fields,
      },
      `${hop} refused the payout's ${step} request as invalid; it is not retried`,
    );
  }

  /**
   * P6 AMBIGUOUS: RAIL_SUBMITTED → RAIL_AMBIGUOUS, terminal for every worker
   * under every token (C3 §3.7, FR-23). No liveness check first: the write
   * only narrows what anyone may do, and the fence still guards it. If it
   * fails the payout stays RAIL_SUBMITTED and the next holder reads the same
   * TIMEOUT/unresolved record and quarantines it: it is never resubmitted.
   */
  private async quarantine(
    a: Attempt,
    submissionId: string | undefined,
    why: string,
  ): Promise<AttemptResult> {
    this.safety.railAmbiguous({
      payoutId: a.payoutId,
      accountId: a.accountId,
      submissionId: submissionId ?? null,
      presentedToken: formatFencingToken(a.token),
      ownerId: this.config.OWNER_ID,
      reason: why,
      source: 'executor',
    });
    try {
      await this.payment('record_outcome', () =>
        this.payments.railOutcome(a.payoutId, a.token, {
          outcome: 'AMBIGUOUS',
          ...(submissionId ? { submissionId } : {}),
          reason: why.slice(0, 512),
        }),
      );
    } catch (err) {
      this.logger.error(
        { payoutId: a.payoutId, code: err instanceof DlockError ? err.code : undefined, err },
        'could not record RAIL_AMBIGUOUS; the proxy record keeps the payout quarantined',
      );
    }
    return { kind: 'ambiguous', payoutId: a.payoutId };
  }

  /** P3: RAIL_ACKED → POSTED, both ledger legs and the balance in one fenced transaction. */
  private async post(
    a: Attempt,
    ack: { submissionId: string; railReference: string },
  ): Promise<AttemptResult> {
    this.checkStillHeld(a);
    await this.payment('post', () => this.payments.post(a.payoutId, a.token, ack));
    return { kind: 'posted', payoutId: a.payoutId };
  }

  /** What a thrown error means for this attempt. FENCED_OUT is terminal for this worker. */
  private gaveUp(a: Attempt, err: unknown): AttemptResult {
    if (err instanceof RefusedByPaymentResource) {
      // No edge of the state machine ends this payout without a rail outcome; it waits for an operator.
      this.reportInvalid(a, 'payment_resource', err.step, err.refusal);
      this.remember(a.payoutId);
      return { kind: 'abandoned', payoutId: a.payoutId, reason: 'invalid' };
    }
    const code = err instanceof DlockError ? err.code : undefined;
    if (code === 'FENCED_OUT') {
      const details = (err as DlockError).details ?? {};
      const where = details.resourceType === 'rail' ? 'rail' : 'account';
      this.logger.error(
        {
          payoutId: a.payoutId,
          resource: where,
          presentedToken: formatFencingToken(a.token),
          highestToken: details.highestToken,
        },
        'fenced out: a newer holder exists; abandoning this payout for this pass, never retrying it',
      );
      return { kind: 'fenced', payoutId: a.payoutId, where };
    }
    if (code === 'LOCK_LOST' || code === 'SESSION_EXPIRED' || code === 'SESSION_UNKNOWN') {
      this.logger.warn(
        { payoutId: a.payoutId, code },
        'lock lost mid-payout; left for a fresh holder',
      );
      return { kind: 'abandoned', payoutId: a.payoutId, reason: 'lock-lost' };
    }
    this.logger.error(
      { payoutId: a.payoutId, code, err },
      'payout attempt failed; left for a later pass',
    );
    return {
      kind: 'abandoned',
      payoutId: a.payoutId,
      reason: code ? `error-${code}` : 'error-unexpected',
    };
  }

  /** Lease discipline (T-025 §4): never start a submit the lease cannot cover. */
  private leaseShort(a: Attempt): AttemptResult | null {
    if (this.skipLiveness) return null;
    const verdict = leaseCoversSubmit(
      a.leaseDeadlineMs,
      performance.now(),
      this.config.submitBudgetMs,
    );
    if (verdict.ok) return null;
    this.logger.warn(
      { payoutId: a.payoutId, remainingMs: verdict.remainingMs, requiredMs: verdict.requiredMs },
      'lease cannot cover the submit budget; releasing for a holder with a fresh token',
    );
    return { kind: 'abandoned', payoutId: a.payoutId, reason: 'lease-too-short' };
  }

  /** FR-13 before each side effect; liveness only, the fence at the resource is the safety. */
  private checkStillHeld(a: Attempt): void {
    if (this.skipLiveness) return;
    a.handle.checkStillHeld();
  }

  private get skipLiveness(): boolean {
    return this.config.DLOCK_HARNESS && this.config.EXECUTOR_SKIP_LIVENESS_CHECK;
  }

  private remember(payoutId: string): void {
    if (this.refused.size >= REFUSED_REMEMBERED_MAX) {
      const oldest = this.refused.values().next();
      if (!oldest.done) this.refused.delete(oldest.value);
    }
    this.refused.add(payoutId);
  }

  /** Every payment-resource call: timed, and a refusal as invalid tagged with its step. */
  private async payment<T>(step: Step, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.metrics.step(step, fn);
    } catch (err) {
      if (isRefusedAsInvalid(err)) throw new RefusedByPaymentResource(step, err);
      throw err;
    }
  }

  private crashPoint(point: CrashPoint): void {
    if (this.config.DLOCK_HARNESS && this.config.EXECUTOR_CRASH_AT === point) {
      this.logger.warn({ point }, 'harness crash point: SIGKILL');
      process.kill(process.pid, 'SIGKILL');
    }
  }

  private done(result: AttemptResult, startedMs: number): AttemptResult {
    this.metrics.attemptsTotal.inc({ result: attemptLabel(result) });
    const label = executeLabel(result);
    if (label !== null) {
      this.metrics.executeSeconds.observe(
        { outcome: label },
        (performance.now() - startedMs) / 1000,
      );
    }
    return result;
  }
}
