import assert from 'node:assert/strict';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DlockError, formatFencingToken, type FencingToken } from '@dlock/lock-api';
import {
  boundedWaitMs,
  deadlineWithin,
  int64Replacer,
  refuseShortBudget,
  type RequestDeadline,
} from '@dlock/http-contract';
import { sqlRows } from '@dlock/persistence';
import { SafetyEvents } from '@dlock/observability';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import { PaymentMetrics, type WriteOperation, type WriteResult } from '../../payment.metrics';
import type { Db } from '../../persistence/paydb.sql';
import {
  FastTransitionRepository,
  type FastWritten,
  type SeenPayout,
} from '../persistence/fast-transition.repository';
import { FenceRepository, type FenceRequest } from '../persistence/fence.repository';
import { PayoutRepository, type PinnedPayout } from '../persistence/payout.repository';
import {
  IdempotencyRepository,
  type Answer,
  type IdempotencyScope,
  type StoredResponse,
} from '../persistence/idempotency.repository';
import { requestHash } from '../domain/request-hash.codec';
import { GrantCheck } from './grant-check.service';
import {
  fastTransition,
  type OperatorCommand,
  type PayoutCommand,
  type WriteOutcome,
} from './payout-command.types';
import { TransactionalPath, type Recorded } from './transactional-path.service';
import { SeenPayouts } from './seen-payouts.service';
import { asUnavailable, isUniqueViolation } from './paydb.errors';

/** What the writer needs of a command's request (fencedCommand). */
interface FencedCommand {
  metric: WriteOperation;
  operation: string;
  payoutId: string;
  token: FencingToken;
  /** X-Grant-Proof as sent: checked before anything else (docs/security.md, "Signed grants"). */
  proof: string | string[] | undefined;
  ownerId: string;
  idempotencyKey: string;
  requestHash: string;
  continuation: boolean;
  /** For the safety events: these routes run without the request logger context. */
  traceId: string;
  /** The caller's deadline: the write's statements end before it (docs/payment-resource.md). */
  deadline?: RequestDeadline;
}

/** Kept back from the caller's deadline for the answer's way back. */
export const WRITE_DEADLINE_MARGIN_MS = 100;
/** The shortest statement timeout a write is started with; less left is refused (503, nothing done). */
export const WRITE_STATEMENT_MIN_MS = 50;

interface StoredError {
  code: DlockError['code'];
  message: string;
  details?: Record<string, unknown>;
}

/** Unwinds the transaction when a duplicate of this request already committed. */
class Replay extends Error {
  constructor(readonly stored: StoredResponse) {
    super('replay');
  }
}

/**
 * The shape of every fenced write (FR-15, docs/payment-resource.md step 5):
 *   BEGIN → the conditional fence advance as the first statement, which also
 *   pins the payout and finds an earlier answer to this request → the work →
 *   store the response → COMMIT.
 * A fenced-out or rejected request rolls back whole: nothing changes.
 * A command whose description allows it (P2, P3, P6) first tries the same in one
 * statement without a transaction, and runs the above only when that statement
 * wrote nothing. Both paths are derived from the one description: the fast one
 * by fastTransition, the transactional one by TransactionalPath.
 */
@Injectable()
export class FencedWriter {
  constructor(
    private readonly dataSource: DataSource,
    private readonly fences: FenceRepository,
    private readonly payouts: PayoutRepository,
    private readonly idempotency: IdempotencyRepository,
    private readonly fastWrites: FastTransitionRepository,
    private readonly safety: SafetyEvents,
    private readonly metrics: PaymentMetrics,
    private readonly grants: GrantCheck,
    private readonly seenPayouts: SeenPayouts,
    private readonly transactions: TransactionalPath,
    @Inject(PAYMENT_CONFIG) private readonly config: PaymentConfig,
  ) {
    safety.guardsResource('account');
    safety.watchesRegression('payment-resource');
  }

  /**
   * A command as its description says (payout-command.types.ts): the fast path first
   * when the description allows it, else or then the transactional one. `T` is
   * the route's 200 body (@dlock/payout-contract); a replay answers the stored one.
   */
  async run<T extends object>(command: PayoutCommand<T>): Promise<T> {
    const cmd = fencedCommand(command);
    const started = process.hrtime.bigint();
    let result: WriteResult = 'error';
    try {
      return await this.execute(cmd, command, (r) => (result = r));
    } catch (err) {
      const unavailable = asUnavailable(err);
      if (unavailable) {
        result = 'unavailable';
        throw unavailable;
      }
      // A budget too short to start the write in (refuseShortBudget).
      if (err instanceof DlockError && err.code === 'UNAVAILABLE') result = 'unavailable';
      if (err instanceof DlockError && err.code === 'PROOF_REJECTED') result = 'proof_rejected';
      throw err;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.writeSeconds.observe({ operation: cmd.metric, result }, seconds);
    }
  }

  /** P7, unfenced, in one transaction (TransactionalPath.recordUnfenced). */
  async runUnfenced<T extends object>(command: OperatorCommand<T>): Promise<T> {
    const started = process.hrtime.bigint();
    let result: 'ok' | 'rejected' | 'error' = 'error';
    try {
      const out = await this.dataSource.transaction((entityManager) =>
        this.transactions.recordUnfenced(entityManager, command),
      );
      result = 'ok';
      return out;
    } catch (err) {
      if (err instanceof DlockError) result = 'rejected';
      throw asUnavailable(err) ?? err;
    } finally {
      this.metrics.writeSeconds.observe(
        { operation: 'abandon', result },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    }
  }

  private async execute<T extends object>(
    cmd: FencedCommand,
    command: PayoutCommand<T>,
    setResult: (r: WriteResult) => void,
  ): Promise<T> {
    const scope: IdempotencyScope = {
      operation: cmd.operation,
      key: cmd.idempotencyKey,
      token: cmd.token,
    };
    // Before the budget, the pool and BEGIN: an unproven grant costs nothing but a signature check.
    const accountId = await this.grants.accountOf(cmd);
    const deadline = deadlineWithin(cmd.deadline, this.config.PAYMENT_REQUEST_BUDGET_MS);
    const requiredMs = WRITE_DEADLINE_MARGIN_MS + WRITE_STATEMENT_MIN_MS;
    refuseShortBudget(deadline, requiredMs);
    if (command.fastPath) {
      const body = await this.tryFast({ ...cmd, accountId }, scope, deadline, command);
      if (body !== null) {
        setResult('ok');
        return body;
      }
    }
    const qr = this.dataSource.createQueryRunner();
    await qr.connect();
    let outcome: Recorded<T>;
    try {
      // The pool wait may have used the caller's budget up: refuse before BEGIN.
      refuseShortBudget(deadline, requiredMs);
      await qr.startTransaction();
      try {
        await this.boundStatements(qr.manager, deadline);
        outcome = await this.inTransaction(qr.manager, { ...cmd, accountId }, scope, command);
        await qr.commitTransaction();
      } catch (err) {
        if (qr.isTransactionActive) await qr.rollbackTransaction();
        throw err;
      }
    } catch (err) {
      if (err instanceof Replay) {
        setResult('replayed');
        return this.replay<T>(err.stored, cmd);
      }
      if (err instanceof DlockError) {
        setResult(err.code === 'FENCED_OUT' ? 'fenced_out' : 'rejected');
      }
      throw err;
    } finally {
      await qr.release();
    }
    outcome.afterCommit?.();
    if (outcome.kind === 'committed-error') {
      setResult('insufficient_funds');
      throw outcome.error;
    }
    setResult('ok');
    return outcome.body;
  }

  /**
   * Statements of this transaction end before the caller stops listening: a
   * timeout rolls the write back whole and answers 503 UNAVAILABLE (retry-safe).
   * Only set when tighter than the pool's PAYDB_STATEMENT_TIMEOUT_MS.
   */
  private async boundStatements(tx: Db, deadline: RequestDeadline): Promise<void> {
    const timeoutMs = this.statementTimeoutMs(deadline);
    if (timeoutMs >= this.config.PAYDB_STATEMENT_TIMEOUT_MS) return;
    await sqlRows(tx, `SELECT set_config('statement_timeout', $1, true)`, [
      String(Math.max(WRITE_STATEMENT_MIN_MS, timeoutMs)),
    ]);
  }

  /** What is left of the deadline for one statement, at most the pool's statement timeout. */
  private statementTimeoutMs(deadline: RequestDeadline): number {
    const limitMs = this.config.PAYDB_STATEMENT_TIMEOUT_MS;
    return boundedWaitMs(limitMs, deadline, WRITE_DEADLINE_MARGIN_MS);
  }

  /**
   * The fast path (docs/payment-resource.md, "The one-statement fast path"): a
   * plain read, then one statement in autocommit that writes everything only
   * if nothing read has changed (FastTransitionRepository.apply). The rows this
   * process's last fast write of the payout returned stand in for the read; a
   * stale guess writes nothing and the read follows. Null: nothing was
   * written; the transactional path then runs and answers whatever stopped
   * this one (no such payout, another account, a replay, fenced out, a
   * transition not allowed, a payout or pinned account that moved meanwhile,
   * a claim the account cannot fund).
   */
  private async tryFast<T extends object>(
    cmd: FencedCommand & { accountId: string },
    scope: IdempotencyScope,
    deadline: RequestDeadline,
    command: PayoutCommand<T>,
  ): Promise<T | null> {
    // The pool's statement timeout is the fast path's only bound: it must fit the deadline.
    const fits = () => this.statementTimeoutMs(deadline) >= this.config.PAYDB_STATEMENT_TIMEOUT_MS;
    // The kill switch's unguarded writes stay on the transactional path.
    if (!this.config.PAYMENT_FENCING_ENABLED || !fits()) return null;
    const db = this.dataSource;
    const remembered = this.seenPayouts.take(cmd.payoutId);
    if (remembered !== null) {
      const body = await this.fastWrite(db, cmd, scope, remembered, command, fits);
      if (body !== null) return body;
    }
    const seen = await this.fastWrites.read(db, cmd.payoutId, scope);
    return seen === null ? null : this.fastWrite(db, cmd, scope, seen, command, fits);
  }

  /** One try of the fast path's statement on the rows `seen`; null: it wrote nothing. */
  private async fastWrite<T extends object>(
    db: Db,
    cmd: FencedCommand & { accountId: string },
    scope: IdempotencyScope,
    seen: SeenPayout,
    command: PayoutCommand<T>,
    fits: () => boolean,
  ): Promise<T | null> {
    if (seen.earlier !== null || seen.payout.accountId !== cmd.accountId) return null;
    const plan = fastTransition(command, seen, (id) => this.transactions.knows(id));
    if (plan === null || !fits()) return null;
    const answer = answerOf(cmd, scope, plan.outcome);
    let written: FastWritten | null;
    try {
      written = await this.fastWrites.apply(db, fenceRequest(cmd), seen, plan, answer);
    } catch (err) {
      // The answer's scope taken by a concurrent request: the statement undid itself.
      if (isUniqueViolation(err)) return null;
      throw err;
    }
    if (written === null) return null;
    assert.equal(written.fence, cmd.token, 'an admitted write sets the fence to its token');
    this.metrics.transitionsTotal.inc({ to_state: plan.to });
    if (plan.movement !== undefined) this.metrics.ledgerPostingsTotal.inc();
    plan.verify(written.payout, written.balanceMinor);
    this.seenPayouts.remember(written.seen);
    return plan.outcome.body;
  }

  private async inTransaction<T extends object>(
    tx: Db,
    cmd: FencedCommand & { accountId: string },
    scope: IdempotencyScope,
    command: PayoutCommand<T>,
  ): Promise<Recorded<T>> {
    const request = fenceRequest(cmd);
    let accountId: string;
    let fence: bigint;
    let pinned: PinnedPayout | null = null;
    if (this.config.PAYMENT_FENCING_ENABLED) {
      const advance = await this.fences.advance(tx, request, scope);
      if (!advance.admitted) throw await this.notAdmitted(tx, cmd, scope);
      ({ accountId, fence, pinned } = advance);
    } else {
      const advance = await this.fences.advanceUnguarded(tx, request);
      if (advance === null) throw await this.unknownPayout(tx, cmd);
      ({ accountId, fence } = advance);
      if (fence > cmd.token) this.tokenRegression(cmd, accountId, fence);
    }
    const { payout, earlier } =
      pinned ?? (await this.payouts.lockForWrite(tx, cmd.payoutId, scope));
    if (earlier) throw new Replay(earlier);
    const answer = (o: WriteOutcome): Answer => answerOf(cmd, scope, o);
    const outcome = await this.transactions.record(
      tx,
      { accountId, fence, payout, answer },
      command,
    );
    const recorded = outcome.recorded ?? (await this.idempotency.record(tx, answer(outcome)));
    // The account's row lock makes this unreachable; if it happens, the earlier answer stands.
    if (!recorded) {
      const duplicate = await this.idempotency.find(tx, scope);
      if (duplicate) throw new Replay(duplicate);
      throw new DlockError('UNAVAILABLE', 'idempotency record contended; retry');
    }
    return outcome;
  }

  /** Detective control only: the guard is switched off, the write lands. */
  private tokenRegression(cmd: FencedCommand, accountId: string, fence: bigint): void {
    this.safety.tokenRegression({
      guard: 'payment-resource',
      accountId,
      payoutId: cmd.payoutId,
      presentedToken: formatFencingToken(cmd.token),
      highestToken: formatFencingToken(fence),
      ownerId: cmd.ownerId,
      traceId: cmd.traceId,
    });
  }

  /**
   * Zero rows from the advance: no such payout, another account's grant, a
   * replay of a committed request, or fenced out.
   */
  private async notAdmitted(
    tx: Db,
    cmd: FencedCommand & { accountId: string },
    scope: IdempotencyScope,
  ): Promise<Error> {
    const accountId = await this.payouts.accountOf(tx, cmd.payoutId);
    if (accountId === null) return notFound(cmd.payoutId);
    if (accountId !== cmd.accountId) return this.grants.wrongAccount(cmd, accountId);
    const duplicate = await this.idempotency.find(tx, scope);
    if (duplicate) return new Replay(duplicate);
    return this.fencedOut(tx, cmd, accountId);
  }

  /** The unguarded advance matched nothing: no such payout, or another account's grant. */
  private async unknownPayout(tx: Db, cmd: FencedCommand & { accountId: string }): Promise<Error> {
    const accountId = await this.payouts.accountOf(tx, cmd.payoutId);
    if (accountId === null) return notFound(cmd.payoutId);
    return this.grants.wrongAccount(cmd, accountId);
  }

  private async fencedOut(tx: Db, cmd: FencedCommand, accountId: string): Promise<DlockError> {
    const highest = await this.fences.current(tx, accountId);
    this.safety.fencedOut({
      resource: 'account',
      resourceId: accountId,
      presentedToken: cmd.token,
      highestToken: highest,
      ownerId: cmd.ownerId,
      traceId: cmd.traceId,
    });
    return new DlockError(
      'FENCED_OUT',
      'a newer lock holder has written this account; abort the critical section',
      {
        details: {
          presentedToken: formatFencingToken(cmd.token),
          highestToken: highest === null ? null : formatFencingToken(highest),
          resourceType: 'account',
          resourceId: accountId,
          ownerId: cmd.ownerId,
        },
      },
    );
  }

  private replay<T extends object>(stored: StoredResponse, cmd: FencedCommand): T {
    if (stored.requestHash !== cmd.requestHash) {
      throw new DlockError(
        'IDEMPOTENCY_CONFLICT',
        'this idempotency key and token were already used with a different request',
        { details: { operation: cmd.operation, idempotencyKey: cmd.idempotencyKey } },
      );
    }
    // Written by answerOf from this route's own 200 body or error.
    if (stored.statusCode === 200) return JSON.parse(stored.body) as T;
    const e = JSON.parse(stored.body) as StoredError;
    throw new DlockError(e.code, e.message, { details: e.details });
  }
}

/** The stored row of a work's outcome: its status and body, under the request's scope. */
function answerOf(cmd: FencedCommand, scope: IdempotencyScope, outcome: WriteOutcome): Answer {
  const stored =
    outcome.kind === 'ok'
      ? { status: 200, body: outcome.body }
      : {
          status: outcome.error.httpStatus,
          body: {
            code: outcome.error.code,
            message: outcome.error.message,
            details: outcome.error.details,
          } satisfies StoredError,
        };
  return {
    scope,
    requestHash: cmd.requestHash,
    payoutId: cmd.payoutId,
    statusCode: stored.status,
    body: JSON.stringify(stored.body, int64Replacer),
  };
}

/** The writer's view of a command: its fence rule, the grant and the request's hash. */
function fencedCommand(command: PayoutCommand<object>): FencedCommand {
  const { grant } = command;
  return {
    metric: command.metric,
    operation: command.operation,
    payoutId: command.payoutId,
    token: grant.token,
    proof: grant.proof,
    ownerId: grant.ownerId,
    idempotencyKey: grant.idempotencyKey,
    requestHash: requestHash(command.payoutId, command.request),
    continuation: command.continuation,
    traceId: grant.traceId,
    deadline: grant.deadline,
  };
}

function fenceRequest(cmd: FencedCommand & { accountId: string }): FenceRequest {
  return {
    payoutId: cmd.payoutId,
    token: cmd.token,
    continuation: cmd.continuation,
    accountId: cmd.accountId,
  };
}

function notFound(payoutId: string): DlockError {
  return new DlockError('NOT_FOUND', 'no such payout', { details: { payoutId } });
}
