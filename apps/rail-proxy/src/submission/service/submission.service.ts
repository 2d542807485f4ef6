import { Inject, Injectable, Logger } from '@nestjs/common';
import assert from 'node:assert';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type QueryRunner } from 'typeorm';
import { DlockError, formatFencingToken, formatInstant } from '@dlock/lock-api';
import type { RequestDeadline } from '@dlock/http-contract';
import { SafetyEvents } from '@dlock/observability';
import type { SubmitResponse } from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import {
  IdempotencyRepository,
  type IdempotencyRecord,
  type StoredResponse,
} from '../persistence/idempotency.repository';
import { RailProxyMetrics } from '../../rail-proxy.metrics';
import { RailClient, type ConnectResult, type RailConnection } from '../clients/rail.client';
import { requestHash } from '../domain/request-hash.codec';
import {
  duplicateSubmissionError,
  fencedOutError,
  idempotencyConflictError,
  intentFailureLevel,
  railAmbiguousError,
  railRejectedError,
  railUnavailableError,
  replayedError,
  storedError,
  type AmbiguousReason,
} from '../domain/submission.errors';
import { SubmissionProofs } from './submission-proofs.service';
import { ReceiptSigner } from './receipt-signer.service';
import { SubmissionRepository } from '../persistence/submission.repository';
import type { SubmissionRecord, SubmissionRequest } from '../domain/submission.types';

type Admission =
  | { kind: 'admitted'; intent: SubmissionRecord; connection: RailConnection }
  | { kind: 'refused'; error: DlockError }
  /** A request with the same key and token got there first: a replay, or a concurrent twin. */
  | { kind: 'twin' };

const REPLAY_POLL_MS = 100;

/**
 * Fence point (c): admission in the order of docs/rail.md — (1) high-water, (2) one
 * live submission per payout, (3) intent committed, (4) forward once, record
 * once, never retry (FR-18..FR-20).
 */
@Injectable()
export class SubmissionService {
  private readonly logger = new Logger('rail-proxy');

  constructor(
    @Inject(RAIL_PROXY_CONFIG) private readonly config: RailProxyConfig,
    private readonly db: DataSource,
    private readonly submissions: SubmissionRepository,
    private readonly idempotency: IdempotencyRepository,
    private readonly rail: RailClient,
    private readonly safety: SafetyEvents,
    private readonly metrics: RailProxyMetrics,
    private readonly proofs: SubmissionProofs,
    private readonly receipts: ReceiptSigner,
  ) {
    safety.guardsResource('rail');
    safety.watchesRegression('rail-proxy');
  }

  async submit(req: SubmissionRequest): Promise<SubmitResponse> {
    // (0) proofs: the grant is the lock-server's and the payout is payment-resource's, field for field.
    await this.proofs.check(req);
    const hash = requestHash(req);
    const deadline = this.withinBudget(req);
    // Opened before anything is written and written to only after the intent
    // commits: a handshake cannot move money (docs/rail.md, "How a 503 proves
    // nothing was presented").
    const connect = await this.rail.connect(deadline);
    // A replay finds its scope taken by the reservation and is answered as a twin.
    const admission =
      (connect.ok ? await this.admitAtOnce(req, hash, connect.connection) : null) ??
      (await this.admit(req, hash, connect));
    switch (admission.kind) {
      case 'refused':
        throw admission.error;
      case 'twin': {
        const twin = await this.guardDb(req.traceId, () =>
          this.idempotency.find(req.idempotencyKey, req.presentedToken),
        );
        if (!twin) throw this.unavailable('intent-not-committed', 'concurrent twin withdrew');
        return this.replay(twin, hash, req);
      }
      case 'admitted':
        return this.forward(req, admission.intent, admission.connection);
    }
  }

  /** R2 (advisory): every record of the payout; outcome null = unresolved. */
  async recordsOf(payoutId: string): Promise<SubmissionRecord[]> {
    return this.submissions.listByPayout(payoutId.toLowerCase());
  }

  /**
   * Steps 1-3 in one statement in autocommit, when the rail answered the
   * connect (docs/rail.md, "Admission in one round trip"): admitted, or null
   * when the statement wrote nothing because the request was not admitted, and
   * `admit` then says why, in a transaction.
   */
  private async admitAtOnce(
    req: SubmissionRequest,
    hash: string,
    connection: RailConnection,
  ): Promise<Admission | null> {
    const fencing = this.config.RAIL_PROXY_FENCING_ENABLED;
    try {
      const admitted = await this.submissions.admitAtOnce(req, hash, fencing);
      if (admitted === null) return null;
      const { mark, intent } = admitted;
      if (mark !== null && mark > req.presentedToken) this.tokenRegression(req, mark);
      return { kind: 'admitted', intent, connection };
    } catch (err) {
      connection.abandon();
      return this.notCommitted(req, err);
    }
  }

  /**
   * Steps 1-3 in ONE transaction, the rail's connect already tried: a connect
   * failure rolls everything back (no intent, no mark advance), so a 503
   * provably presented nothing and is safely retryable with the same token.
   * The connection is written to only after COMMIT, and closed unused on
   * every other way out.
   */
  private async admit(
    req: SubmissionRequest,
    hash: string,
    connect: ConnectResult,
  ): Promise<Admission> {
    const fencing = this.config.RAIL_PROXY_FENCING_ENABLED;
    const qr = this.db.createQueryRunner();
    let admitted = false;
    try {
      await qr.connect();
      await qr.startTransaction(); // PostgreSQL's default, READ COMMITTED
      const { reserved, marked, mark, intent } = await this.submissions.admit(
        qr.manager,
        req,
        hash,
        fencing,
      );
      if (!reserved) {
        await qr.rollbackTransaction();
        return { kind: 'twin' };
      }
      if (mark !== null && mark > req.presentedToken) this.tokenRegression(req, mark);
      // (1) fence: the mark did not rise, a newer holder presented first.
      if (!marked) return await this.refuseFenced(qr, req);
      // (2): the payout already has a live submission (FR-18).
      if (intent === null) return await this.refuseDuplicate(qr, req);
      if (!connect.ok) {
        await qr.rollbackTransaction();
        this.metrics.outcome('unavailable');
        return {
          kind: 'refused',
          error: this.unavailable('rail-unreachable', connect.reason),
        };
      }
      await qr.commitTransaction();
      admitted = true;
      return { kind: 'admitted', intent, connection: connect.connection };
    } catch (err) {
      if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
      return this.notCommitted(req, err);
    } finally {
      if (!admitted && connect.ok) connect.connection.abandon();
      await qr.release().catch(() => undefined);
    }
  }

  /** A database failure before the intent committed: 503, nothing was presented. */
  private notCommitted(req: SubmissionRequest, err: unknown): Admission {
    this.logger[intentFailureLevel(err)](
      { err, payoutId: req.payoutId, traceId: req.traceId },
      'intent not committed',
    );
    this.metrics.outcome('unavailable');
    return { kind: 'refused', error: this.unavailable('intent-not-committed', errorName(err)) };
  }

  /** Step 1 refused: the fenced attempt and its stored answer are committed, then reported. */
  private async refuseFenced(qr: QueryRunner, req: SubmissionRequest): Promise<Admission> {
    const m = qr.manager;
    assert(this.config.RAIL_PROXY_FENCING_ENABLED, 'the mark always rises with the guard off');
    const highest = await this.submissions.highWater(m, req.accountId);
    assert(highest >= req.presentedToken, 'a refused token must not exceed the mark');
    const fenced = await this.submissions.insertFenced(m, req, highest);
    const error = fencedOutError(req, highest);
    await this.idempotency.complete(
      m,
      req.idempotencyKey,
      req.presentedToken,
      fenced.submissionId,
      storedError(error),
    );
    await qr.commitTransaction();
    this.metrics.outcome('fenced');
    this.safety.fencedOut({
      resource: 'rail',
      resourceId: req.accountId,
      presentedToken: req.presentedToken,
      highestToken: highest,
      ownerId: req.ownerId,
      traceId: req.traceId,
    });
    return { kind: 'refused', error };
  }

  /** Step 2 refused: the answer naming the live submission is committed, then reported. */
  private async refuseDuplicate(qr: QueryRunner, req: SubmissionRequest): Promise<Admission> {
    const m = qr.manager;
    const live = await this.submissions.findLive(m, req.payoutId);
    // Withdrawn (or its transaction rolled back) since the insert looked: nothing is live now.
    if (!live) throw new Error('the live submission this intent met was withdrawn');
    const error = duplicateSubmissionError(req, live);
    await this.idempotency.complete(
      m,
      req.idempotencyKey,
      req.presentedToken,
      live.submissionId,
      storedError(error),
    );
    await qr.commitTransaction();
    this.duplicate(req, live);
    return { kind: 'refused', error };
  }

  /**
   * Detective control only, as payment-resource's fenced writer does: the
   * guard is switched off, so a token below the mark is let through.
   */
  private tokenRegression(req: SubmissionRequest, mark: bigint): void {
    this.safety.tokenRegression({
      guard: 'rail-proxy',
      accountId: req.accountId,
      payoutId: req.payoutId,
      presentedToken: formatFencingToken(req.presentedToken),
      highestToken: formatFencingToken(mark),
      ownerId: req.ownerId,
      traceId: req.traceId,
    });
  }

  /** Step 4: exactly one presentation, exactly one recorded outcome, no retry (FR-20). */
  private async forward(
    req: SubmissionRequest,
    intent: SubmissionRecord,
    connection: RailConnection,
  ): Promise<SubmitResponse> {
    const pauseMs = this.config.RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS;
    if (pauseMs > 0) {
      this.logger.warn(
        { submissionId: intent.submissionId, pauseMs, traceId: req.traceId },
        'test pause after intent',
      );
      await sleep(pauseMs);
    }
    const stopTimer = this.metrics.forwardSeconds.startTimer();
    const answer = await connection.present({
      clientRef: req.clientRef,
      amountMinor: req.amountMinor,
      currency: req.currency,
    });
    stopTimer({ outcome: answer.kind });
    switch (answer.kind) {
      case 'not-presented':
        return this.withdraw(req, intent, answer.reason);
      case 'acked': {
        const resolved = await this.record(req, intent, 'ACKED', answer.railReference, null, {
          status: 200,
        });
        this.metrics.outcome('acked');
        return this.ackedBody(resolved);
      }
      case 'declined': {
        // The receipt rides in the stored answer, so a replay carries the same (docs/rail.md, "Receipts").
        const receipt = this.receipts.sign(req.payoutId, intent, {
          out: 'REJECTED',
          ref: null,
          atMs: Date.now(),
        });
        const error = railRejectedError(req, intent.submissionId, answer.status, receipt);
        await this.record(
          req,
          intent,
          'REJECTED',
          null,
          `RAIL_HTTP_${answer.status}`,
          storedError(error),
        );
        this.metrics.outcome('rejected');
        throw error;
      }
      case 'ambiguous': {
        const error = railAmbiguousError(req, intent.submissionId, answer.reason);
        await this.record(
          req,
          intent,
          'TIMEOUT',
          null,
          answer.reason.toUpperCase(),
          storedError(error),
        );
        this.ambiguous(req, intent.submissionId, answer.reason);
        throw error;
      }
    }
  }

  /**
   * Resolves the intent and stores the response, in one statement. If that
   * fails the row stays unresolved, which every reader treats as "may have
   * moved money", and the caller is told exactly that.
   */
  private async record(
    req: SubmissionRequest,
    intent: SubmissionRecord,
    outcome: 'ACKED' | 'REJECTED' | 'TIMEOUT',
    railReference: string | null,
    errorCode: string | null,
    response: StoredResponse,
  ): Promise<SubmissionRecord> {
    try {
      const resolved = await this.submissions.resolve(
        intent.submissionId,
        outcome,
        railReference,
        errorCode,
        { key: req.idempotencyKey, token: req.presentedToken, response },
      );
      assert(resolved, `submission ${intent.submissionId} was resolved twice`);
      return resolved;
    } catch (err) {
      this.logger.error(
        { err, submissionId: intent.submissionId, outcome, traceId: req.traceId },
        'outcome not recorded',
      );
      this.ambiguous(req, intent.submissionId, 'outcome-not-recorded');
      throw railAmbiguousError(req, intent.submissionId, 'outcome-not-recorded', null);
    }
  }

  /**
   * The connection died before any byte was written: the intent is resolved
   * WITHDRAWN (kept, never deleted) and the idempotency scope is released, so
   * a later holder's submission is not blocked by it (docs/rail.md).
   */
  private async withdraw(
    req: SubmissionRequest,
    intent: SubmissionRecord,
    cause: string,
  ): Promise<never> {
    try {
      await this.db.transaction(async (m) => {
        const withdrawn = await this.submissions.withdraw(
          m,
          intent.submissionId,
          cause.toUpperCase().replace(/[^A-Z0-9]+/g, '_'),
        );
        assert(withdrawn, 'intent already resolved');
        await this.idempotency.release(m, req.idempotencyKey, req.presentedToken);
      });
    } catch (err) {
      this.logger.error(
        { err, submissionId: intent.submissionId, traceId: req.traceId },
        'intent withdrawal failed',
      );
      this.ambiguous(req, intent.submissionId, 'intent-withdrawal-failed');
      throw railAmbiguousError(req, intent.submissionId, 'intent-withdrawal-failed', null);
    }
    this.metrics.outcome('unavailable');
    throw this.unavailable('connection-closed-before-write', cause);
  }

  private async replay(
    prior: IdempotencyRecord,
    hash: string,
    req: SubmissionRequest,
  ): Promise<SubmitResponse> {
    if (prior.requestHash !== hash) throw idempotencyConflictError();
    const deadline =
      Date.now() +
      this.config.RAIL_CONNECT_TIMEOUT_MS +
      this.config.RAIL_READ_TIMEOUT_MS +
      this.config.RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS +
      2_000;
    let current: IdempotencyRecord | null = prior;
    while (current && current.response === null && Date.now() < deadline) {
      await sleep(REPLAY_POLL_MS);
      current = await this.guardDb(req.traceId, () =>
        this.idempotency.find(req.idempotencyKey, req.presentedToken),
      );
    }
    if (!current) throw this.unavailable('connection-closed-before-write', 'original withdrawn');
    const stored = current.response;
    if (stored === null) {
      // The original attempt never recorded an ending (still running, or its process died).
      throw railAmbiguousError(req, current.submissionId, 'original-attempt-unresolved', null);
    }
    this.metrics.replays.inc();
    this.logger.log(
      { payoutId: req.payoutId, status: stored.status, traceId: req.traceId },
      'idempotent replay',
    );
    if ('error' in stored) throw replayedError(stored);
    if (stored.body) return stored.body as unknown as SubmitResponse;
    const submissionId = current.submissionId;
    assert(submissionId, 'an answered scope names its submission');
    const acked = await this.guardDb(req.traceId, () => this.submissions.find(submissionId));
    assert(acked, `submission ${submissionId} of an answered scope is missing`);
    return this.ackedBody(acked);
  }

  /** R1's 200: the acknowledged record and its receipt (docs/rail.md, "Receipts"). */
  private ackedBody(r: SubmissionRecord): SubmitResponse {
    assert(r.outcome === 'ACKED' && r.railReference && r.resolvedAt, 'not an acked submission');
    const railReceipt = this.receipts.ofRecord(r);
    assert(railReceipt !== null, 'an acked submission has a receipt');
    return {
      submissionId: r.submissionId,
      payoutId: r.payoutId,
      presentedToken: formatFencingToken(r.presentedToken),
      outcome: 'ACKED',
      railReference: r.railReference,
      submittedAt: formatInstant(r.createdAt),
      resolvedAt: formatInstant(r.resolvedAt),
      railReceipt,
    };
  }

  /** Before the intent: a rail call cut short by the deadline would be ambiguous (docs/rail.md). */
  private withinBudget(req: SubmissionRequest): RequestDeadline {
    try {
      return this.rail.deadlineFor(req.deadline);
    } catch (err) {
      this.metrics.outcome('unavailable');
      throw err;
    }
  }

  private duplicate(req: SubmissionRequest, existing: SubmissionRecord): void {
    this.safety.record('duplicate_rail_submission_attempted', {
      payoutId: req.payoutId,
      accountId: req.accountId,
      presentedToken: req.presentedToken,
      ownerId: req.ownerId,
      existingSubmissionId: existing.submissionId,
      existingOutcome: existing.outcome,
      existingPresentedToken: existing.presentedToken,
      traceId: req.traceId,
    });
  }

  private ambiguous(req: SubmissionRequest, submissionId: string, reason: AmbiguousReason): void {
    this.metrics.outcome('timeout');
    this.safety.record('rail_ambiguous', {
      payoutId: req.payoutId,
      accountId: req.accountId,
      submissionId,
      presentedToken: req.presentedToken,
      ownerId: req.ownerId,
      reason,
      traceId: req.traceId,
    });
  }

  private unavailable(
    reason: Parameters<typeof railUnavailableError>[0],
    cause: string,
  ): DlockError {
    return railUnavailableError(reason, cause, this.config.RAIL_PROXY_UNAVAILABLE_RETRY_AFTER_MS);
  }

  /** A database failure before anything was presented is RAIL_UNAVAILABLE, never a 500. */
  private async guardDb<T>(traceId: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.logger.error({ err, traceId }, 'proxydb unavailable');
      throw this.unavailable('intent-not-committed', errorName(err));
    }
  }
}

function errorName(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown } | null;
  if (typeof e?.code === 'string') return e.code;
  return typeof e?.name === 'string' ? e.name : 'error';
}
