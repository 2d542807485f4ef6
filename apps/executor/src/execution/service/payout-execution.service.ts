import { Inject, Injectable, Logger } from '@nestjs/common';
import assert from 'node:assert/strict';
import {
  DlockError,
  formatFencingToken,
  type FenceCredential,
  type FencingToken,
} from '@dlock/lock-api';
import type { LockHandle, LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import { EXECUTOR_CONFIG, type ExecutorConfig } from '../../config';
import {
  PaymentResourceClient,
  payoutLockKey,
  RailProxyClient,
  type PayoutSummary,
  type PayoutView,
} from '@dlock/payout-contract';
import { ExecutorMetrics, type InvalidHop, type Step } from '../../executor.metrics';
import { AttemptHooks } from '../domain/attempt-hooks.port';
import { ExecutionClock } from '../domain/execution-clock.port';
import type { Ack, AttemptStep } from '../domain/attempt-step.types';
import { attemptLabel, executeLabel, type AttemptResult } from '../domain/execution-outcome.rules';
import {
  afterAckedRefused,
  afterClaimRefused,
  afterSubmitFailure,
  classifyFailure,
  isRefusedAsInvalid,
  RefusedByPaymentResource,
} from '../domain/hop-answers.rules';
import {
  firstStep,
  stepForState,
  stepFromEvidence,
  stepFromRecords,
} from '../domain/recovery.rules';
import { RefusedPayouts } from '../domain/refused-payouts.model';

/** Everything one attempt needs; the grant is captured once from the handle and never re-read. */
interface Attempt {
  readonly payoutId: string;
  readonly accountId: string;
  readonly handle: LockHandle;
  /** The token and the lock-server's proof of it, presented at every fenced write. */
  readonly fence: FenceCredential;
  readonly token: FencingToken;
  readonly stop: AbortSignal;
}

type Ongoing = Exclude<AttemptStep, { to: 'end' }>;
type StepOf<T extends Ongoing['to']> = Extract<Ongoing, { to: T }>;

/** Payouts remembered as refused by payment-resource; oldest forgotten first. */
const REFUSED_REMEMBERED_MAX = 10_000;

/**
 * Calls in the longest attempt: a polled claim that finds the payout moved on,
 * the re-read, the re-claim, SUBMITTED, a submit answered DUPLICATE_SUBMISSION,
 * the proxy's record, ACKED, the post. Nothing leads back to a submit after one.
 */
export const MAX_STEPS_PER_ATTEMPT = 8;

/**
 * The payout state machine of the executor (docs/executor.md, docs/executor.md flows A and D,
 * docs/payment-resource.md): one attempt is a bounded loop of steps, each one call, in a fixed
 * order, no hidden retries. acquire → claim (P2) → RAIL_SUBMITTED (P6) →
 * submit → outcome (P6) → post (P3) → release, the release in `finally` on
 * every path. A payout a dead worker left half-way resumes from its state.
 */
@Injectable()
export class PayoutExecutionService {
  private readonly logger = new Logger('payout-execution');
  /** Payouts payment-resource refused as invalid before anything settled them: not retried by this process. */
  private readonly refused = new RefusedPayouts(REFUSED_REMEMBERED_MAX);

  constructor(
    @Inject(EXECUTOR_CONFIG) private readonly config: ExecutorConfig,
    private readonly payments: PaymentResourceClient,
    private readonly rail: RailProxyClient,
    private readonly metrics: ExecutorMetrics,
    private readonly safety: SafetyEvents,
    private readonly hooks: AttemptHooks,
    private readonly clock: ExecutionClock,
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
    const startedMs = this.clock.nowMs();
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
      fence: handle.fence,
      token: handle.fence.token,
      stop,
    };
    let result: AttemptResult;
    try {
      result = await this.run(attempt, firstStep(payout));
    } catch (err) {
      result = this.gaveUp(attempt, err);
    } finally {
      // Every path, ambiguity included: a lease over a finished or quarantined payout blocks the account for nothing.
      await this.metrics.step('release', () => handle.release());
    }
    return this.done(result, startedMs);
  }

  /** True for a payout payment-resource refused as invalid in this process: the poll leaves it alone. */
  wasRefusedAsInvalid(payoutId: string): boolean {
    return this.refused.has(payoutId);
  }

  /**
   * L4 under the SDK's fixed budget (retry-policy.ts, docs/contract.md): up to five
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
        session.acquire(payoutLockKey(accountId), { signal: stop }),
      );
    } catch (err) {
      if (err instanceof DlockError && err.code === 'CONTENTION_EXCEEDED') return 'contended';
      if (stop.aborted) return 'stopped';
      throw err;
    }
  }

  /** The attempt: step after step until one ends it, never more than MAX_STEPS_PER_ATTEMPT calls. */
  private async run(a: Attempt, first: AttemptStep): Promise<AttemptResult> {
    let next = first;
    for (let steps = 0; next.to !== 'end'; steps++) {
      assert.ok(steps < MAX_STEPS_PER_ATTEMPT, `attempt exceeded ${MAX_STEPS_PER_ATTEMPT} steps`);
      next = await this.step(a, next);
    }
    if (next.alarm !== undefined) this.logger.error({ payoutId: a.payoutId }, next.alarm);
    return { ...next.result, payoutId: a.payoutId };
  }

  /**
   * One step. Top to bottom this is docs/executor.md's order: claim, RAIL_SUBMITTED,
   * submit, the outcome, post. Recovery enters it part-way: the re-read and
   * the proxy's record pick where (recovery.rules.ts).
   */
  private step(a: Attempt, s: Ongoing): Promise<AttemptStep> {
    switch (s.to) {
      case 'reread':
        return this.reread(a);
      case 'resolve-from-record':
        return this.resolveFromRecord(a, s);
      case 'claim':
        return this.claim(a, s);
      case 'mark-submitted':
        return this.markSubmitted(a, s.view);
      case 'submit':
        return this.submit(a, s.view, s.instruction);
      case 'post-from-evidence':
        return this.postFromEvidence(a, s.view);
      case 'record-acked':
        return this.recordAcked(a, s.ack);
      case 'record-rejected':
        return this.recordRejected(a, s);
      case 'quarantine':
        return this.quarantine(a, s);
      case 'post':
        return this.post(a, s.ack);
    }
  }

  /** P4, advisory: the state says where recovery enters the order (docs/payment-resource.md). */
  private async reread(a: Attempt): Promise<AttemptStep> {
    const view = await this.payment('reread', () => this.payments.get(a.payoutId));
    return stepForState(view);
  }

  /** R2: the proxy's record of the submission decides a RAIL_SUBMITTED payout. */
  private async resolveFromRecord(
    a: Attempt,
    s: StepOf<'resolve-from-record'>,
  ): Promise<AttemptStep> {
    if (s.duplicate !== undefined) {
      this.logger.error(
        {
          event: 'executor_duplicate_submission',
          payoutId: a.payoutId,
          presentedToken: formatFencingToken(a.token),
          details: s.duplicate,
        },
        'proxy refused a second submission for this payout; resolving from its record',
      );
    }
    const records = await this.metrics.step('proxy_record', () => this.rail.records(a.payoutId));
    return stepFromRecords(s.view, records, s.duplicate !== undefined);
  }

  /** R3: the rail's record of a RAIL_ACKED payout, receipted by the proxy, for its post. */
  private async postFromEvidence(a: Attempt, view: PayoutView): Promise<AttemptStep> {
    const evidence = await this.metrics.step('proxy_record', () => this.rail.evidence(a.payoutId));
    return stepFromEvidence(view, evidence);
  }

  /** P2: PENDING → CLAIMED, or the recovery re-claim CLAIMED → CLAIMED under the newer token. */
  private async claim(a: Attempt, s: StepOf<'claim'>): Promise<AttemptStep> {
    if (a.stop.aborted) return stopping();
    this.checkStillHeld(a);
    try {
      await this.payment('claim', () => this.payments.claim(a.payoutId, a.fence, s.expected));
    } catch (err) {
      return afterClaimRefused(err, s.rereadIfMoved) ?? rethrow(err);
    }
    await this.hooks.reached('after-claim', a.stop);
    return { to: 'mark-submitted', view: s.view };
  }

  /**
   * P6 SUBMITTED: CLAIMED → RAIL_SUBMITTED (or, recovering a payout a dead
   * holder marked, RAIL_SUBMITTED again under this token), recorded before
   * anything reaches the proxy. The answer is the signed instruction the
   * proxy admits the submission on (docs/rail.md, "Instructions").
   */
  private async markSubmitted(a: Attempt, view: PayoutView): Promise<AttemptStep> {
    if (a.stop.aborted) return stopping();
    // Checked here too, so a payout whose lease is already short stays CLAIMED rather than half-way.
    const short = this.leaseShort(a);
    if (short) return short;
    this.checkStillHeld(a);
    const marked = await this.payment('mark_submitted', () =>
      this.payments.markSubmitted(a.payoutId, a.fence),
    );
    await this.hooks.reached('after-submitted', a.stop);
    return { to: 'submit', view, instruction: marked.railInstruction };
  }

  /** The one side effect nothing can roll back: exactly one presentation, never retried. */
  private async submit(a: Attempt, view: PayoutView, instruction: string): Promise<AttemptStep> {
    await this.hooks.reached('before-submit', a.stop);
    if (a.stop.aborted) return stopping();
    const short = this.leaseShort(a);
    if (short) return short;
    this.checkStillHeld(a);
    let ack: Ack;
    try {
      ack = await this.metrics.step('submit', () =>
        this.rail.submit(a.fence, instruction, {
          payoutId: a.payoutId,
          accountId: view.accountId,
          amountMinor: view.amountMinor,
          currency: view.currency,
          beneficiaryRef: view.beneficiaryRef,
        }),
      );
    } catch (err) {
      return afterSubmitFailure(view, err) ?? rethrow(err);
    }
    await this.hooks.reached('after-submit', a.stop);
    return { to: 'record-acked', ack };
  }

  /** P6 ACKED. Refused as invalid, the payout is quarantined: the rail took the money. */
  private async recordAcked(a: Attempt, ack: Ack): Promise<AttemptStep> {
    this.checkStillHeld(a);
    try {
      await this.payment('record_outcome', () =>
        this.payments.railOutcome(a.payoutId, a.fence, { outcome: 'ACKED', ...ack }),
      );
    } catch (err) {
      return afterAckedRefused(err) ?? rethrow(err);
    }
    await this.hooks.reached('after-ack', a.stop);
    return { to: 'post', ack };
  }

  /**
   * P6 REJECTED: RAIL_SUBMITTED → FAILED on the proxy's receipt of the rail's
   * decline. Nothing moved; no rail retry.
   */
  private async recordRejected(a: Attempt, s: StepOf<'record-rejected'>): Promise<AttemptStep> {
    this.checkStillHeld(a);
    await this.payment('record_outcome', () =>
      this.payments.railOutcome(a.payoutId, a.fence, {
        outcome: 'REJECTED',
        submissionId: s.submissionId,
        reason: s.why.slice(0, 512),
        railReceipt: s.railReceipt,
      }),
    );
    return { to: 'end', result: { kind: 'failed', reason: 'RAIL_REJECTED' } };
  }

  /**
   * P6 AMBIGUOUS: RAIL_SUBMITTED → RAIL_AMBIGUOUS, terminal for every worker
   * under every token (docs/rail.md, FR-23). No liveness check first: the write
   * only narrows what anyone may do, and the fence still guards it. If it
   * fails the payout stays RAIL_SUBMITTED and the next holder reads the same
   * TIMEOUT/unresolved record and quarantines it: it is never resubmitted.
   */
  private async quarantine(a: Attempt, s: StepOf<'quarantine'>): Promise<AttemptStep> {
    if (s.refusal) this.reportInvalid(a, s.refusal.hop, s.refusal.step, s.refusal.error);
    this.safety.record('rail_ambiguous', {
      payoutId: a.payoutId,
      accountId: a.accountId,
      submissionId: s.submissionId ?? null,
      presentedToken: formatFencingToken(a.token),
      ownerId: this.config.OWNER_ID,
      reason: s.why,
      source: 'executor',
    });
    try {
      await this.payment('record_outcome', () =>
        this.payments.railOutcome(a.payoutId, a.fence, {
          outcome: 'AMBIGUOUS',
          ...(s.submissionId ? { submissionId: s.submissionId } : {}),
          reason: s.why.slice(0, 512),
        }),
      );
    } catch (err) {
      this.logger.error(
        { payoutId: a.payoutId, code: err instanceof DlockError ? err.code : undefined, err },
        'could not record RAIL_AMBIGUOUS; the proxy record keeps the payout quarantined',
      );
    }
    return { to: 'end', result: { kind: 'ambiguous' } };
  }

  /** P3: RAIL_ACKED → POSTED, both ledger legs and the balance in one fenced transaction. */
  private async post(a: Attempt, ack: Ack): Promise<AttemptStep> {
    this.checkStillHeld(a);
    await this.payment('post', () => this.payments.post(a.payoutId, a.fence, ack));
    return { to: 'end', result: { kind: 'posted' } };
  }

  /** What a thrown error means for this attempt (hop-answers.rules.ts classifies it). */
  private gaveUp(a: Attempt, err: unknown): AttemptResult {
    const failure = classifyFailure(err);
    const payoutId = a.payoutId;
    switch (failure.kind) {
      case 'invalid':
        // No edge of the state machine ends this payout without a rail outcome; it waits for an operator.
        this.reportInvalid(a, 'payment_resource', failure.step, failure.refusal);
        this.refused.add(payoutId);
        return { kind: 'abandoned', payoutId, reason: 'invalid' };
      case 'fenced':
        this.logger.error(
          {
            payoutId,
            resource: failure.where,
            presentedToken: formatFencingToken(a.token),
            highestToken: failure.highestToken,
          },
          'fenced out: a newer holder exists; abandoning this payout for this pass, never retrying it',
        );
        return { kind: 'fenced', payoutId, where: failure.where };
      case 'lock-lost':
        this.logger.warn(
          { payoutId, code: failure.code },
          'lock lost mid-payout; left for a fresh holder',
        );
        return { kind: 'abandoned', payoutId, reason: 'lock-lost' };
      case 'error': {
        const code = failure.code;
        this.logger.error({ payoutId, code, err }, 'payout attempt failed; left for a later pass');
        return { kind: 'abandoned', payoutId, reason: code ? `error-${code}` : 'error-unexpected' };
      }
    }
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

  /** Lease discipline (docs/executor.md): never start a submit the lease cannot cover. */
  private leaseShort(a: Attempt): AttemptStep | null {
    if (this.skipLiveness) return null;
    // The lock's own lease, not remainingMs(): see lease.rules.ts for why the session's does not count.
    const verdict = a.handle.leaseCovers(this.config.submitBudgetMs);
    if (verdict.ok) return null;
    this.logger.warn(
      { payoutId: a.payoutId, remainingMs: verdict.remainingMs, requiredMs: verdict.requiredMs },
      'lease cannot cover the submit budget; releasing for a holder with a fresh token',
    );
    return { to: 'end', result: { kind: 'abandoned', reason: 'lease-too-short' } };
  }

  /** FR-13 before each side effect; liveness only, the fence at the resource is the safety. */
  private checkStillHeld(a: Attempt): void {
    if (this.skipLiveness) return;
    a.handle.checkStillHeld();
  }

  private get skipLiveness(): boolean {
    return this.config.DLOCK_HARNESS && this.config.EXECUTOR_SKIP_LIVENESS_CHECK;
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

  private done(result: AttemptResult, startedMs: number): AttemptResult {
    this.metrics.attemptsTotal.inc({ result: attemptLabel(result) });
    const label = executeLabel(result);
    if (label !== null) {
      this.metrics.executeSeconds.observe(
        { outcome: label },
        (this.clock.nowMs() - startedMs) / 1000,
      );
    }
    return result;
  }
}

function stopping(): AttemptStep {
  return { to: 'end', result: { kind: 'abandoned', reason: 'shutting-down' } };
}

/** A hop's error that is not one of its answers: the attempt gives up on it (gaveUp). */
function rethrow(err: unknown): never {
  throw err;
}
