import type { FencedGrantHeaders } from '@dlock/http-contract';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import assert from 'node:assert/strict';
import {
  DlockError,
  ValidationError,
  formatFencingToken,
  type FencingToken,
} from '@dlock/lock-api';
import type {
  AbandonRequest,
  AbandonResponse,
  ClaimRequest,
  ClaimResponse,
  PayoutState,
  PostRequest,
  PostResponse,
  RailOutcomeKind,
  RailOutcomeRequest,
  RailOutcomeResponse,
  ResolveRequest,
  ResolveResponse,
  TransitionView,
} from '@dlock/payout-contract';
import { PayoutSafetyEvents as SafetyEvents } from '../../safety-events';
import { preparedManager } from '@dlock/persistence';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import { balancedPair, clearingAccountFor, directionOf } from '../../ledger/domain/ledger';
import { transition, type PayoutEvent } from '@dlock/payout-contract';
import { PaymentMetrics } from '../../metrics';
import { AccountRepository } from '../../ledger/persistence/account.repository';
import type { Db } from '../../persistence/db';
import {
  LedgerRepository,
  newEntries,
  type LedgerEntry,
} from '../../ledger/persistence/ledger.repository';
import type { Answer } from '../persistence/idempotency.repository';
import {
  PayoutRepository,
  type Payout,
  type PayoutPatch,
  type TransitionLogEntry,
} from '../persistence/payout.repository';
import { TransitionLogRepository } from '../persistence/transition-log.repository';
import {
  FencedWriter,
  type AnsweredTransition,
  type FenceContext,
  type WriteOutcome,
} from './fenced-writer';
import { InstructionSigner } from './instruction-signer';
import { ReceiptCheck, receiptFits } from './receipt-check';
import { requestHash } from '../domain/canonical';
import { asUnavailable } from './paydb-errors';

/**
 * The protected-write headers, parsed by the controller's `@FencedGrant()` and
 * passed explicitly (docs/payment-resource.md step 3); the proof is checked first.
 */
export type Grant = FencedGrantHeaders;

/** The longest reason a transition records (the body's own limit). */
const REASON_MAX_LENGTH = 1024;

const RAIL_EVENT: Record<RailOutcomeKind, PayoutEvent> = {
  SUBMITTED: 'RAIL_SUBMITTED',
  ACKED: 'RAIL_ACKED',
  REJECTED: 'RAIL_REJECTED',
  AMBIGUOUS: 'RAIL_AMBIGUOUS',
};

/** Rules of every payout write: which transition, what it records, what it answers. */
@Injectable()
export class PayoutCommands {
  private readonly logger = new Logger('payouts');
  /** Clearing accounts this process has seen committed; spares the per-post existence insert. */
  private readonly knownClearing = new Set<string>();

  constructor(
    private readonly writer: FencedWriter,
    private readonly dataSource: DataSource,
    private readonly payouts: PayoutRepository,
    private readonly accounts: AccountRepository,
    private readonly ledger: LedgerRepository,
    private readonly log: TransitionLogRepository,
    private readonly safety: SafetyEvents,
    private readonly metrics: PaymentMetrics,
    private readonly instructions: InstructionSigner,
    private readonly receipts: ReceiptCheck,
    @Inject(PAYMENT_CONFIG) private readonly config: PaymentConfig,
  ) {}

  /**
   * P2 — claim a payout (docs/payment-resource.md#endpoints). A claim the
   * payout as read allows first tries the one-statement fast path, which
   * checks the funds itself and writes nothing when they fall short; the
   * transactional path then commits the FAILED transition and its answer.
   */
  claim(payoutId: string, grant: Grant, body: ClaimRequest): Promise<ClaimResponse> {
    return this.writer.run<ClaimResponse>(
      this.command('claim', 'claim', payoutId, grant, body, false),
      async (tx, ctx) => {
        const payout = ctx.payout;
        if (payout.state !== body.expectedState) throw this.staleClaim(payout, body, grant);
        this.allowed(payout, 'CLAIM', grant);
        let event: PayoutEvent = 'CLAIM';
        let availableMinor: number | undefined;
        if (payout.state === 'PENDING') {
          availableMinor = await this.accounts.availableMinor(tx, ctx.accountId, payoutId);
          if (availableMinor < payout.amountMinor) event = 'CLAIM_INSUFFICIENT_FUNDS';
        }
        const insufficient = event === 'CLAIM_INSUFFICIENT_FUNDS';
        // The answer rides on the transition's statement, so it is built first, from the pinned row.
        const to = this.next(payout, event);
        const attemptCount = payout.attemptCount + 1;
        const outcome: WriteOutcome<ClaimResponse> = insufficient
          ? {
              kind: 'committed-error',
              error: insufficientFunds(payout, to, availableMinor),
            }
          : this.ok(claimBody(ctx, grant, to));
        const { updated, answered } = await this.apply(
          tx,
          payout,
          event,
          grant,
          {
            ...claimPatch(grant),
            ...(insufficient ? { failureReason: 'INSUFFICIENT_FUNDS', stampSettledAt: true } : {}),
          },
          { answer: ctx.answer(outcome) },
        );
        assert.deepEqual(
          [updated.state, updated.attemptCount],
          [to, attemptCount],
          'the recorded answer must describe the committed row',
        );
        return { ...outcome, recorded: answered };
      },
      (ctx) =>
        ctx.payout.state === body.expectedState && transition(ctx.payout.state, 'CLAIM').allowed
          ? this.fastClaim(ctx, grant)
          : null,
    );
  }

  /** P2's CLAIM for the fast path: funds are checked by its statement, from PENDING only (as above). */
  private fastClaim(ctx: FenceContext, grant: Grant): AnsweredTransition<ClaimResponse> {
    const before = ctx.payout;
    const to = this.next(before, 'CLAIM');
    const body = claimBody(ctx, grant, to);
    const patch = claimPatch(grant);
    return {
      patch: { ...patch, state: to, tokenStamp: grant.token },
      log: logEntry(before, 'CLAIM', grant, patch, undefined),
      outcome: { kind: 'ok', body },
      funded: before.state === 'PENDING',
      committed: (updated) => {
        this.metrics.transitionsTotal.inc({ to_state: to });
        assert.deepEqual(
          [updated.state, updated.attemptCount],
          [body.state, body.attemptCount],
          'the recorded answer must describe the committed row',
        );
      },
    };
  }

  /**
   * P6: the payout's rail transitions, recorded by the holder (docs/contract.md).
   * A transition the payout as read allows first tries the one-statement fast
   * path (FencedWriter.tryFast); everything else, and whatever changed since
   * that read, takes the transactional path, which answers it.
   */
  async railOutcome(
    payoutId: string,
    grant: Grant,
    body: RailOutcomeRequest,
    receipt: string | string[] | undefined,
  ): Promise<RailOutcomeResponse> {
    if (body.outcome === 'ACKED' && body.submissionId === undefined) {
      throw new ValidationError([
        { field: 'submissionId', message: 'submissionId is required when outcome is ACKED' },
      ]);
    }
    // What the rail answered needs the proxy's receipt; SUBMITTED and AMBIGUOUS move no money.
    const evidence =
      body.outcome === 'ACKED' || body.outcome === 'REJECTED'
        ? await this.receipts.read(receipt, { ...body, outcome: body.outcome, payoutId, grant })
        : null;
    const event = RAIL_EVENT[body.outcome];
    const answered = (ctx: FenceContext) => {
      // RAIL_SUBMITTED answers the instruction the rail-proxy admits the submission on.
      const railInstruction =
        body.outcome === 'SUBMITTED'
          ? { railInstruction: this.instructions.sign(ctx.payout, grant.token, grant.ownerId) }
          : {};
      return this.answeredTransition(ctx, event, grant, railPatch(body), body.reason, {
        outcome: body.outcome,
        ...railInstruction,
      });
    };
    return this.writer.run(
      this.command('rail_outcome', `rail-outcome:${body.outcome}`, payoutId, grant, body, true),
      async (tx, ctx) => {
        this.allowed(ctx.payout, event, grant);
        this.sameSubmission(ctx.payout, body.submissionId);
        if (evidence) this.receipts.againstPayout(evidence, ctx.payout, grant);
        return this.recordAnswered(tx, ctx, answered(ctx));
      },
      (ctx) =>
        transition(ctx.payout.state, event).allowed &&
        !otherSubmission(ctx.payout, body.submissionId) &&
        receiptFits(evidence, ctx.payout)
          ? answered(ctx)
          : null,
    );
  }

  /**
   * P3: both ledger legs, both balances and the state change, in one
   * transaction (INV-03). The clearing balance is the last row touched, so its
   * row lock is held only from that update to the commit. A post the payout
   * as read allows, to a clearing account known to exist, first tries the
   * one-statement fast path, which books the same in the same lock order.
   */
  async post(
    payoutId: string,
    grant: Grant,
    body: PostRequest,
    receipt: string | string[] | undefined,
  ): Promise<PostResponse> {
    const evidence = await this.receipts.read(receipt, {
      ...body,
      outcome: 'ACKED',
      payoutId,
      grant,
    });
    let created: string | undefined;
    const answer = await this.writer.run(
      this.command('post', 'post', payoutId, grant, body, true),
      async (tx, ctx) => {
        const payout = ctx.payout;
        this.allowed(payout, 'POST', grant);
        this.sameSubmission(payout, body.submissionId);
        this.receipts.againstPayout(evidence, payout, grant);
        const clearing = this.clearingFor(payout);
        if (!this.knownClearing.has(clearing)) {
          await this.accounts.ensureSystem(tx, clearing, 'CLEARING', payout.currency);
          created = clearing;
        }
        const { updated } = await this.apply(tx, payout, 'POST', grant, postPatch(body));
        // Last: the shared clearing row stays locked only from here to the commit.
        const { entries, balances } = await this.ledger.post(
          tx,
          balancedPair(ctx.accountId, clearing, payout.amountMinor),
          { kind: 'PAYOUT', payoutId, fence: grant.token },
        );
        const account = balances.get(ctx.accountId);
        assert.ok(account);
        assert.equal(account.currency, payout.currency, 'payout currency must match its account');
        this.metrics.ledgerPostingsTotal.inc();
        return this.ok(postBody(payoutId, updated.state, entries, account.balanceMinor, grant));
      },
      (ctx) => (receiptFits(evidence, ctx.payout) ? this.fastPost(ctx, grant, body) : null),
    );
    // Committed: the clearing account exists for good (accounts are never deleted).
    if (created !== undefined) this.knownClearing.add(created);
    return answer;
  }

  /**
   * P3 for the fast path, or null for the transactional one: a post the table
   * refuses, another submission, a clearing account not yet known to exist, or
   * an account in another currency. Its statement pins the account as read, so
   * the balance after is the one read less the amount.
   */
  private fastPost(
    ctx: FenceContext,
    grant: Grant,
    body: PostRequest,
  ): AnsweredTransition<PostResponse> | null {
    const before = ctx.payout;
    const clearing = this.clearingFor(before);
    if (
      !transition(before.state, 'POST').allowed ||
      otherSubmission(before, body.submissionId) ||
      !this.knownClearing.has(clearing) ||
      ctx.account?.currency !== before.currency
    ) {
      return null;
    }
    const to = this.next(before, 'POST');
    const meta = { kind: 'PAYOUT' as const, payoutId: before.payoutId, fence: grant.token };
    const entries = newEntries(balancedPair(ctx.accountId, clearing, before.amountMinor), meta);
    const balanceMinor = ctx.account.balanceMinor - before.amountMinor;
    const patch = postPatch(body);
    return {
      patch: { ...patch, state: to, tokenStamp: grant.token },
      log: logEntry(before, 'POST', grant, patch, undefined),
      outcome: { kind: 'ok', body: postBody(before.payoutId, to, entries, balanceMinor, grant) },
      movement: { entries, meta },
      committed: (updated, balanceAfter) => {
        this.metrics.transitionsTotal.inc({ to_state: to });
        this.metrics.ledgerPostingsTotal.inc();
        assert.deepEqual(
          [updated.state, balanceAfter],
          [to, balanceMinor],
          'the recorded answer must describe the committed rows',
        );
      },
    };
  }

  /** The clearing account (shard) that takes this payout's credit leg. */
  private clearingFor(payout: Payout): string {
    return clearingAccountFor(
      payout.currency,
      payout.payoutId,
      this.config.PAYMENT_CLEARING_SHARDS,
    );
  }

  /** P8: the reconciler's only way out of RAIL_AMBIGUOUS, on the rail's record as the proxy receipted it. */
  async resolve(
    payoutId: string,
    grant: Grant,
    body: ResolveRequest,
    receipt: string | string[] | undefined,
  ): Promise<ResolveResponse> {
    const evidence = await this.receipts.read(receipt, {
      ...body,
      outcome: body.resolution,
      payoutId,
      grant,
    });
    return this.writer.run(
      this.command('resolve', 'resolve', payoutId, grant, body, true),
      async (tx, ctx) => {
        const payout = ctx.payout;
        const event: PayoutEvent =
          body.resolution === 'ACKED' ? 'RESOLVE_ACKED' : 'RESOLVE_NOT_FOUND';
        this.allowed(payout, event, grant);
        this.sameSubmission(payout, body.submissionId);
        this.receipts.againstPayout(evidence, payout, grant);
        const patch: Omit<PayoutPatch, 'state'> = {
          submissionId: body.submissionId,
          railReference: body.railReference,
        };
        if (body.resolution === 'NOT_FOUND') {
          patch.failureReason = 'RAIL_NOT_FOUND';
          patch.stampSettledAt = true;
        }
        const t = this.answeredTransition(ctx, event, grant, patch, body.evidence, {
          resolution: body.resolution,
        });
        return this.recordAnswered(tx, ctx, t);
      },
    );
  }

  /**
   * P7: operator cancel. No token: it advances no fence, but it takes the
   * account's row lock, so it serialises with every fenced writer. The actor
   * recorded is the authenticated caller; a body `operator` naming someone
   * else is kept as a note in the reason (docs/security.md).
   */
  async abandon(payoutId: string, asked: AbandonRequest, actor: string): Promise<AbandonResponse> {
    const body: AbandonRequest = {
      operator: actor,
      reason:
        asked.operator === actor
          ? asked.reason
          : `${asked.reason} [noted operator: ${asked.operator}]`.slice(0, REASON_MAX_LENGTH),
    };
    const started = process.hrtime.bigint();
    let result: 'ok' | 'rejected' | 'error' = 'error';
    try {
      const out = await this.dataSource.transaction((entityManager) =>
        this.abandonIn(entityManager, payoutId, body),
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

  /** P7's transaction: account row lock, the table's check, the ABANDONED row and its audit. */
  private async abandonIn(
    entityManager: EntityManager,
    payoutId: string,
    body: AbandonRequest,
  ): Promise<AbandonResponse> {
    const manager = preparedManager(entityManager);
    const accountId = await this.payouts.accountOf(manager, payoutId);
    if (accountId === null) {
      throw new DlockError('NOT_FOUND', 'no such payout', { details: { payoutId } });
    }
    await this.accounts.lock(manager, accountId);
    const payout = await this.payouts.lock(manager, payoutId);
    const event: PayoutEvent =
      payout.state === 'RAIL_AMBIGUOUS' &&
      (await this.payouts.ambiguousLongerThan(
        manager,
        payoutId,
        this.config.PAYOUT_AMBIGUOUS_SLA_MS,
      ))
        ? 'ABANDON_AFTER_SLA'
        : 'ABANDON';
    this.allowed(
      payout,
      event,
      { ownerId: body.operator, token: null },
      { ambiguousSlaMs: this.config.PAYOUT_AMBIGUOUS_SLA_MS },
    );
    const to = this.next(payout, event);
    const updated = await this.payouts.apply(manager, payoutId, {
      state: to,
      failureReason: `ABANDONED by ${body.operator}: ${body.reason}`,
      stampSettledAt: true,
    });
    await this.log.record(manager, {
      payoutId,
      from: payout.state,
      to,
      event,
      actor: body.operator,
      token: null,
      reason: body.reason,
    });
    this.metrics.transitionsTotal.inc({ to_state: to });
    return {
      payoutId,
      state: updated.state,
      previousState: payout.state,
      operator: body.operator,
      reason: body.reason,
      abandonedAt: updated.settledAt?.toISOString() ?? null,
    };
  }

  private command(
    metric: 'claim' | 'post' | 'rail_outcome' | 'resolve',
    operation: string,
    payoutId: string,
    grant: Grant,
    body: object,
    continuation: boolean,
  ) {
    return {
      metric,
      operation,
      payoutId,
      token: grant.token,
      proof: grant.proof,
      ownerId: grant.ownerId,
      idempotencyKey: grant.idempotencyKey,
      requestHash: requestHash(payoutId, body),
      continuation,
      traceId: grant.traceId,
      deadline: grant.deadline,
    };
  }

  /**
   * A claim whose expectedState no longer holds: the caller read the payout before
   * another worker moved it on, and lost that race. Refused like any claim the state
   * does not allow, but counted apart and logged at debug, not as an invalid_transition:
   * every worker polling the same list meets it (docs/payment-resource.md).
   */
  private staleClaim(payout: Payout, body: ClaimRequest, grant: Grant): DlockError {
    const { payoutId, state } = payout;
    this.metrics.staleClaimsTotal.inc({ state });
    this.logger.debug(
      {
        event: 'stale_claim',
        payoutId,
        state,
        expectedState: body.expectedState,
        actor: grant.ownerId,
        traceId: grant.traceId,
      },
      'claim refused: the payout moved on since the caller read it',
    );
    return new DlockError(
      'PAYOUT_NOT_CLAIMABLE',
      `payout is ${state}, not the expected ${body.expectedState}`,
      { details: { payoutId, state, expectedState: body.expectedState } },
    );
  }

  /** The table decides (INV-08); an unlisted pair is logged, counted and refused. */
  private allowed(
    payout: Payout,
    event: PayoutEvent,
    who: { ownerId: string; token: FencingToken | null; traceId?: string },
    extra: Record<string, unknown> = {},
  ): void {
    if (transition(payout.state, event).allowed) return;
    this.safety.invalidTransition({
      payoutId: payout.payoutId,
      state: payout.state,
      payoutEvent: event,
      actor: who.ownerId,
      token: who.token === null ? null : formatFencingToken(who.token),
      ...(who.traceId === undefined ? {} : { traceId: who.traceId }),
    });
    throw new DlockError(
      'PAYOUT_NOT_CLAIMABLE',
      `payout is ${payout.state}; ${event} is not a transition it allows`,
      { details: { payoutId: payout.payoutId, state: payout.state, event, ...extra } },
    );
  }

  private next(payout: Payout, event: PayoutEvent): PayoutState {
    const t = transition(payout.state, event);
    assert.ok(t.allowed, `transition ${payout.state} + ${event} was checked before`);
    return t.to;
  }

  /** One submission per payout (INV-02): an outcome naming another one is a client defect. */
  private sameSubmission(payout: Payout, submissionId: string | undefined): void {
    if (otherSubmission(payout, submissionId)) {
      throw new ValidationError([
        {
          field: 'submissionId',
          message: `does not match the submission already recorded for this payout (${payout.submissionId})`,
        },
      ]);
    }
  }

  private async apply(
    tx: Db,
    payout: Payout,
    event: PayoutEvent,
    grant: Grant,
    patch: Omit<PayoutPatch, 'state'>,
    extra: { reason?: string; answer?: Answer } = {},
  ): Promise<{ updated: Payout; answered: boolean }> {
    const to = this.next(payout, event);
    const { payout: updated, answered } = await this.payouts.applyAndLog(
      tx,
      payout.payoutId,
      { ...patch, state: to, tokenStamp: grant.token },
      logEntry(payout, event, grant, patch, extra.reason),
      extra.answer,
    );
    this.metrics.transitionsTotal.inc({ to_state: to });
    return { updated, answered };
  }

  /**
   * P6/P8: the transition and its answer, for one statement that records both.
   * The answer is built from the payout as found and the patch before the
   * statement runs, and checked against the row it returns.
   */
  private answeredTransition<E extends object>(
    ctx: FenceContext,
    event: PayoutEvent,
    grant: Grant,
    patch: Omit<PayoutPatch, 'state'>,
    reason: string | undefined,
    extra: E,
  ): AnsweredTransition<TransitionView & E> {
    const before = ctx.payout;
    const to = this.next(before, event);
    const expected = this.transitionBody(
      before,
      {
        payoutId: before.payoutId,
        state: to,
        // The columns are uuid: they come back in lower case.
        submissionId: patch.submissionId?.toLowerCase() ?? before.submissionId,
        railReference: patch.railReference ?? before.railReference,
        tokenStamp: grant.token,
      },
      ctx,
      extra,
    );
    return {
      patch: { ...patch, state: to, tokenStamp: grant.token },
      log: logEntry(before, event, grant, patch, reason),
      outcome: { kind: 'ok', body: expected },
      committed: (updated) => {
        this.metrics.transitionsTotal.inc({ to_state: to });
        assert.deepEqual(
          this.transitionBody(before, updated, ctx, extra),
          expected,
          'the recorded answer must describe the committed row',
        );
      },
    };
  }

  /** The transactional path's statement for an answered transition. */
  private async recordAnswered<T extends object>(
    tx: Db,
    ctx: FenceContext,
    t: AnsweredTransition<T>,
  ): Promise<WriteOutcome<T>> {
    const { payout: updated, answered } = await this.payouts.applyAndLog(
      tx,
      ctx.payout.payoutId,
      t.patch,
      t.log,
      ctx.answer(t.outcome),
    );
    t.committed(updated);
    return { ...t.outcome, recorded: answered };
  }

  private transitionBody<E extends object>(
    before: Payout,
    after: Pick<Payout, 'payoutId' | 'state' | 'submissionId' | 'railReference' | 'tokenStamp'>,
    ctx: FenceContext,
    extra: E,
  ): TransitionView & E {
    return {
      payoutId: after.payoutId,
      state: after.state,
      previousState: before.state,
      ...extra,
      submissionId: after.submissionId,
      railReference: after.railReference,
      tokenStamp: after.tokenStamp === null ? null : formatFencingToken(after.tokenStamp),
      accountFence: formatFencingToken(ctx.fence),
    };
  }

  private ok<T extends object>(body: T): WriteOutcome<T> {
    return { kind: 'ok', body };
  }
}

/** What a P6 outcome writes besides the state. */
function railPatch(body: RailOutcomeRequest): Omit<PayoutPatch, 'state'> {
  const patch: Omit<PayoutPatch, 'state'> = {
    submissionId: body.submissionId,
    railReference: body.railReference,
  };
  switch (body.outcome) {
    case 'SUBMITTED':
      patch.stampSubmittedAt = true;
      break;
    case 'ACKED':
      break;
    case 'REJECTED':
      patch.failureReason = `RAIL_REJECTED${body.reason ? `: ${body.reason}` : ''}`;
      patch.stampSettledAt = true;
      break;
    case 'AMBIGUOUS':
      patch.stampAmbiguousAt = true;
      break;
  }
  return patch;
}

/** An outcome naming another submission than the one recorded (INV-02). */
function otherSubmission(payout: Payout, submissionId: string | undefined): boolean {
  return (
    submissionId !== undefined &&
    payout.submissionId !== null &&
    payout.submissionId.toLowerCase() !== submissionId.toLowerCase()
  );
}

/** A fenced transition's audit row (FR-30). */
function logEntry(
  payout: Payout,
  event: PayoutEvent,
  grant: Grant,
  patch: Omit<PayoutPatch, 'state'>,
  reason: string | undefined,
): TransitionLogEntry {
  return {
    from: payout.state,
    event,
    actor: grant.ownerId,
    token: grant.token,
    submissionId: patch.submissionId ?? null,
    railReference: patch.railReference ?? null,
    reason: reason ?? null,
  };
}

function insufficientFunds(
  payout: Payout,
  state: PayoutState,
  availableMinor: number | undefined,
): DlockError {
  return new DlockError(
    'INSUFFICIENT_FUNDS',
    'the account cannot fund this payout; it is now FAILED and must not reach the rail',
    {
      details: {
        payoutId: payout.payoutId,
        accountId: payout.accountId,
        state,
        amountMinor: payout.amountMinor,
        availableMinor,
      },
    },
  );
}

/** What a claim writes besides the state (and, funds short, the failure). */
function claimPatch(grant: Grant): Omit<PayoutPatch, 'state'> {
  return { claimedBy: grant.ownerId, incrementAttempts: true, stampClaimedAt: true };
}

/** P2's 200 body, from the payout as found and the state it moves to. */
function claimBody(ctx: FenceContext, grant: Grant, to: PayoutState): ClaimResponse {
  return {
    payoutId: ctx.payout.payoutId,
    state: to,
    claimToken: formatFencingToken(grant.token),
    accountFence: formatFencingToken(ctx.fence),
    attemptCount: ctx.payout.attemptCount + 1,
    idempotencyKey: grant.idempotencyKey,
  };
}

/** What a post writes besides the state. */
function postPatch(body: PostRequest): Omit<PayoutPatch, 'state'> {
  return {
    submissionId: body.submissionId,
    railReference: body.railReference,
    stampSettledAt: true,
  };
}

/** P3's 200 body: the legs as booked and the account's balance after them. */
function postBody(
  payoutId: string,
  state: PayoutState,
  entries: readonly LedgerEntry[],
  balanceMinor: number,
  grant: Grant,
): PostResponse {
  return {
    payoutId,
    state,
    entries: entries.map((e) => ({
      entryId: e.entryId,
      accountId: e.accountId,
      direction: directionOf(e.amountMinor),
      amountMinor: Math.abs(e.amountMinor),
      fence: formatFencingToken(grant.token),
    })),
    balanceMinor,
  };
}
