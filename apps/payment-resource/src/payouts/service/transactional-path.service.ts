import assert from 'node:assert/strict';
import { Injectable, Logger } from '@nestjs/common';
import { DlockError, ValidationError, formatFencingToken } from '@dlock/lock-api';
import { PayoutSafetyEvents } from '../../payout-safety-events.service';
import { balancedPair } from '../../ledger/domain/ledger.rules';
import { AccountRepository } from '../../ledger/persistence/account.repository';
import { LedgerRepository } from '../../ledger/persistence/ledger.repository';
import { PaymentMetrics } from '../../payment.metrics';
import type { Db } from '../../persistence/paydb.sql';
import type { Answer } from '../persistence/idempotency.repository';
import { PayoutRepository, type Payout } from '../persistence/payout.repository';
import {
  legsMeta,
  logOf,
  patchOf,
  predicted,
  sameOutcome,
  type Actor,
  type OperatorCommand,
  type PayoutCommand,
  type Refusal,
  type Step,
  type Written,
  type WriteOutcome,
} from './payout-command.types';
import { ReceiptCheck } from './receipt-check.service';

/** The payout as the fenced transaction pinned it, and how its answer is stored. */
export interface FenceContext {
  accountId: string;
  /** The account's fence after the advance. */
  fence: bigint;
  /** The payout as found, row-locked. */
  payout: Payout;
  /** The stored row of an outcome, for a statement that records the answer itself. */
  answer(outcome: WriteOutcome): Answer;
}

/** A transactional outcome, and what the process learns once it has committed. */
export type Recorded<T extends object> = WriteOutcome<T> & { afterCommit?: () => void };

/**
 * A command's transactional path (docs/payment-resource.md, "How a protected
 * write works", step 3), derived from its description: a refusal answered
 * with its event and error, the funds read when the step needs them, then
 * the transition, its audit row and the answer in one statement; a step with
 * legs books them last, and its answer is stored by one more insert.
 */
@Injectable()
export class TransactionalPath {
  private readonly logger = new Logger('payouts');
  /** Clearing accounts this process has seen committed; spares the per-post existence insert. */
  private readonly knownAccounts = new Set<string>();

  constructor(
    private readonly payouts: PayoutRepository,
    private readonly accounts: AccountRepository,
    private readonly ledger: LedgerRepository,
    private readonly receipts: ReceiptCheck,
    private readonly safety: PayoutSafetyEvents,
    private readonly metrics: PaymentMetrics,
  ) {}

  /** Whether the account is known to exist (the fast path's statement creates none). */
  knows(accountId: string): boolean {
    return this.knownAccounts.has(accountId);
  }

  /** The command on the payout the fence advance pinned. */
  async record<T extends object>(
    tx: Db,
    ctx: FenceContext,
    cmd: PayoutCommand<T>,
  ): Promise<Recorded<T>> {
    const before = ctx.payout;
    const refusal = cmd.refusal(before);
    if (refusal !== null) throw this.refused(refusal, before, cmd.grant);
    let step = cmd.step(before);
    if (step.funded !== undefined) {
      const availableMinor = await this.accounts.availableMinor(tx, ctx.accountId, before.payoutId);
      if (availableMinor < before.amountMinor) step = step.funded.short(availableMinor);
    }
    if (step.legs !== undefined) return this.withLegs(tx, ctx, cmd, step);
    const token = cmd.grant.token;
    // The answer rides on the transition's statement, so it is built first, from the pinned row.
    const expected: Written = {
      before,
      after: predicted(before, step, token),
      fence: ctx.fence,
      entries: [],
      balanceMinor: null,
    };
    const outcome = step.answer(expected);
    const { payout: after, answered } = await this.payouts.applyAndLog(
      tx,
      before.payoutId,
      patchOf(before, step, token),
      logOf(before, step, cmd.grant),
      ctx.answer(outcome),
    );
    this.metrics.transitionsTotal.inc({ to_state: after.state });
    assert.ok(
      sameOutcome(step.answer({ ...expected, after }), outcome),
      'the recorded answer must describe the committed row',
    );
    return { ...outcome, recorded: answered };
  }

  /**
   * A step with ledger legs (P3): the transition, then the legs, last, so the
   * shared clearing row stays locked only from its update to the commit. The
   * answer names the balance the legs left, so it is stored afterwards.
   */
  private async withLegs<T extends object>(
    tx: Db,
    ctx: FenceContext,
    cmd: PayoutCommand<T>,
    step: Step<T>,
  ): Promise<Recorded<T>> {
    const before = ctx.payout;
    const legs = step.legs;
    assert.ok(legs !== undefined);
    const created = !this.knownAccounts.has(legs.credit);
    if (created) await this.accounts.ensureSystem(tx, legs.credit, 'CLEARING', legs.currency);
    const token = cmd.grant.token;
    const { payout: after } = await this.payouts.applyAndLog(
      tx,
      before.payoutId,
      patchOf(before, step, token),
      logOf(before, step, cmd.grant),
    );
    this.metrics.transitionsTotal.inc({ to_state: after.state });
    const { entries, balances } = await this.ledger.post(
      tx,
      balancedPair(legs.debit, legs.credit, legs.amountMinor),
      legsMeta(before.payoutId, token),
    );
    const account = balances.get(legs.debit);
    assert.ok(account);
    assert.equal(account.currency, legs.currency, 'payout currency must match its account');
    this.metrics.ledgerPostingsTotal.inc();
    const written = {
      before,
      after,
      fence: ctx.fence,
      entries,
      balanceMinor: account.balanceMinor,
    };
    return {
      ...step.answer(written),
      // Committed: the clearing account exists for good (accounts are never deleted).
      afterCommit: created ? () => this.knownAccounts.add(legs.credit) : undefined,
    };
  }

  /**
   * P7's transaction: the account's row lock (it serialises with every fenced
   * writer), the payout's, the SLA asked of the database when it matters, the
   * table's check, then the transition and its audit row in one statement.
   */
  async recordUnfenced<T extends object>(db: Db, cmd: OperatorCommand<T>): Promise<T> {
    const accountId = await this.payouts.accountOf(db, cmd.payoutId);
    if (accountId === null) {
      throw new DlockError('NOT_FOUND', 'no such payout', { details: { payoutId: cmd.payoutId } });
    }
    await this.accounts.lock(db, accountId);
    const before = await this.payouts.lock(db, cmd.payoutId);
    const pastSla =
      before.state === cmd.asksSlaIn &&
      (await this.payouts.ambiguousLongerThan(db, cmd.payoutId, cmd.ambiguousSlaMs));
    const refusal = cmd.refusal(before, pastSla);
    if (refusal !== null) throw this.refused(refusal, before, cmd.actor);
    const step = cmd.step(before, pastSla);
    const { payout: after } = await this.payouts.applyAndLog(
      db,
      cmd.payoutId,
      patchOf(before, step, cmd.actor.token),
      logOf(before, step, cmd.actor),
    );
    this.metrics.transitionsTotal.inc({ to_state: after.state });
    const outcome = step.answer({ before, after, fence: 0n, entries: [], balanceMinor: null });
    assert.equal(outcome.kind, 'ok', 'an operator command commits no error');
    return (outcome as { body: T }).body;
  }

  /** A refusal's event and error: nothing of the write is kept. */
  private refused(refusal: Refusal, payout: Payout, actor: Actor): Error {
    switch (refusal.kind) {
      case 'stale-claim':
        return this.staleClaim(payout, refusal.expectedState, actor);
      case 'not-allowed':
        this.safety.invalidTransition({
          payoutId: payout.payoutId,
          state: payout.state,
          payoutEvent: refusal.event,
          actor: actor.ownerId,
          token: actor.token === null ? null : formatFencingToken(actor.token),
          ...(actor.traceId === undefined ? {} : { traceId: actor.traceId }),
        });
        return new DlockError(
          'PAYOUT_NOT_CLAIMABLE',
          `payout is ${payout.state}; ${refusal.event} is not a transition it allows`,
          {
            details: {
              payoutId: payout.payoutId,
              state: payout.state,
              event: refusal.event,
              ...refusal.details,
            },
          },
        );
      case 'other-submission':
        return new ValidationError([
          {
            field: 'submissionId',
            message: `does not match the submission already recorded for this payout (${payout.submissionId})`,
          },
        ]);
      case 'receipt':
        assert.ok(actor.token !== null, 'a receipt proves a fenced write');
        this.receipts.refused(payout.payoutId, { ...actor, token: actor.token }, refusal.error);
        return refusal.error;
    }
  }

  /**
   * A claim whose expectedState no longer holds: the caller read the payout before
   * another worker moved it on, and lost that race. Refused like any claim the state
   * does not allow, but counted apart and logged at debug, not as an invalid_transition:
   * every worker polling the same list meets it (docs/payment-resource.md).
   */
  private staleClaim(payout: Payout, expectedState: string, actor: Actor): DlockError {
    const { payoutId, state } = payout;
    this.metrics.staleClaimsTotal.inc({ state });
    this.logger.debug(
      {
        event: 'stale_claim',
        payoutId,
        state,
        expectedState,
        actor: actor.ownerId,
        traceId: actor.traceId,
      },
      'claim refused: the payout moved on since the caller read it',
    );
    return new DlockError(
      'PAYOUT_NOT_CLAIMABLE',
      `payout is ${state}, not the expected ${expectedState}`,
      {
        details: { payoutId, state, expectedState },
      },
    );
  }
}
