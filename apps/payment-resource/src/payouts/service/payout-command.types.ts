import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { FencedGrantHeaders } from '@dlock/http-contract';
import type { DlockError, FencingToken, ProofRejectedError } from '@dlock/lock-api';
import { transition, type PayoutEvent, type PayoutState } from '@dlock/payout-contract';
import { balancedPair } from '../../ledger/domain/ledger.rules';
import {
  newEntries,
  type LedgerEntry,
  type MovementMeta,
} from '../../ledger/persistence/ledger.repository';
import type { FastTransition } from '../persistence/fast-transition.repository';
import type { Payout, PayoutPatch, TransitionLogEntry } from '../persistence/payout.repository';

/**
 * One payout command, described once (docs/payment-resource.md, "One
 * description per command"): its fence rule, the checks on the payout as
 * found, and the transition it then writes. FencedWriter derives both the
 * one-statement path (fastTransition below) and the transactional fallback
 * (TransactionalPath) from it. Everything here is pure: no I/O, no events.
 */
export interface PayoutCommand<T extends object> {
  metric: 'claim' | 'post' | 'rail_outcome' | 'resolve';
  /** Idempotency operation: claim, post, resolve, rail-outcome:<outcome>. */
  operation: string;
  payoutId: string;
  grant: FencedGrantHeaders;
  /** The request as sent: its hash tells a replay from a conflicting reuse of the key. */
  request: object;
  /**
   * The fence rule (docs/payment-resource.md, "Strict `<`"): false, only a newer
   * token is admitted (a claim); true, the same token may continue its payout.
   */
  continuation: boolean;
  /** Whether the one-statement path is tried first (P2, P3, P6; P8 is rare). */
  fastPath: boolean;
  /** The first check the payout as found fails, in the order they are answered; null: none. */
  refusal(payout: Payout): Refusal | null;
  /** What the write does to a payout that passed every check. */
  step(payout: Payout): Step<T>;
}

/** P7: unfenced; it takes the account's row lock instead and decides on the database's clock. */
export interface OperatorCommand<T extends object> {
  payoutId: string;
  actor: Actor;
  /** The ambiguity the operator may end early is asked of the database only in this state. */
  asksSlaIn: PayoutState;
  ambiguousSlaMs: number;
  refusal(payout: Payout, pastSla: boolean): Refusal | null;
  step(payout: Payout, pastSla: boolean): Step<T>;
}

/** Who a transition is recorded for: the grant's owner and token, or an operator (no token). */
export interface Actor {
  ownerId: string;
  token: FencingToken | null;
  traceId?: string;
}

/** Why the payout as found refuses a write; the transactional path answers it (TransactionalPath). */
export type Refusal =
  /** A claim whose expectedState no longer holds: a lost race, not a defect. */
  | { kind: 'stale-claim'; expectedState: PayoutState }
  /** The transition table lists no such pair (INV-08). */
  | { kind: 'not-allowed'; event: PayoutEvent; details?: Record<string, unknown> }
  /** An outcome naming another submission than the one recorded (INV-02). */
  | { kind: 'other-submission'; submissionId: string }
  /** The rail-proxy's receipt is missing, forged or of something else (docs/rail.md, "Receipts"). */
  | { kind: 'receipt'; error: ProofRejectedError };

/** One row of the transition table, with everything the write records and answers. */
export interface Step<T extends object> {
  event: PayoutEvent;
  /** What the payout's update writes besides its state and token stamp. */
  patch: Omit<PayoutPatch, 'state' | 'tokenStamp'>;
  /** The audit row's reason. */
  reason?: string;
  /** The ledger pair the transition books (P3). */
  legs?: Legs;
  /** From PENDING: written only if the account can fund the payout; else `short` commits. */
  funded?: { short(availableMinor: number): Step<T> };
  /** The answer, from the rows the write leaves (see Written). */
  answer(w: Written): WriteOutcome<T>;
}

/** A movement from the payout's account to a system clearing account, created on first use. */
export interface Legs {
  debit: string;
  credit: string;
  amountMinor: number;
  currency: string;
}

/**
 * The rows a step leaves, for its answer. An answer recorded by the
 * transition's own statement is built from `after` as predicted (predicted
 * below) and checked against the row the statement returns, so it may not
 * name the instants the database's clock stamps.
 */
export interface Written {
  before: Payout;
  after: Payout;
  /** The account's fence after the write. */
  fence: bigint;
  /** The legs booked, none without `legs`. */
  entries: readonly LedgerEntry[];
  /** The account's balance after the legs; null without `legs`. */
  balanceMinor: number | null;
}

export type WriteOutcome<T extends object = object> = (
  | { kind: 'ok'; body: T }
  /** A transition that commits and is still reported as an error (INSUFFICIENT_FUNDS). */
  | { kind: 'committed-error'; error: DlockError }
) & {
  /** Set by a write that recorded the answer in its transition's statement: did the insert land? */
  recorded?: boolean;
};

/** A step derived for the fast path's one statement, with its answer built before it. */
export interface FastPlan<T extends object> extends FastTransition {
  to: PayoutState;
  outcome: { kind: 'ok'; body: T };
  /** After the statement: throws when the rows it returned do not match the answer. */
  verify(after: Payout, balanceMinor: number): void;
}

/** The table's answer for a pair the command's checks allowed. */
export function toState(payout: Payout, event: PayoutEvent): PayoutState {
  const t = transition(payout.state, event);
  assert.ok(t.allowed, `transition ${payout.state} + ${event} was checked before`);
  return t.to;
}

/** The payout's update for a step, its state from the table. */
export function patchOf<T extends object>(
  before: Payout,
  step: Step<T>,
  token: FencingToken | null,
): PayoutPatch {
  const patch: PayoutPatch = { ...step.patch, state: toState(before, step.event) };
  if (token !== null) patch.tokenStamp = token;
  return patch;
}

/** A step's audit row (FR-30). */
export function logOf<T extends object>(
  before: Payout,
  step: Step<T>,
  actor: Actor,
): TransitionLogEntry {
  return {
    from: before.state,
    event: step.event,
    actor: actor.ownerId,
    token: actor.token,
    submissionId: step.patch.submissionId ?? null,
    railReference: step.patch.railReference ?? null,
    reason: step.reason ?? null,
  };
}

/** The payout's row as the step's update will leave it, the database clock's instants aside. */
export function predicted<T extends object>(
  before: Payout,
  step: Step<T>,
  token: FencingToken | null,
): Payout {
  const { patch } = step;
  return {
    ...before,
    state: toState(before, step.event),
    tokenStamp: token ?? before.tokenStamp,
    attemptCount: before.attemptCount + (patch.incrementAttempts === true ? 1 : 0),
    claimedBy: patch.claimedBy ?? before.claimedBy,
    // The column is uuid: it comes back in lower case.
    submissionId: patch.submissionId?.toLowerCase() ?? before.submissionId,
    railReference: patch.railReference ?? before.railReference,
    failureReason: patch.failureReason ?? before.failureReason,
  };
}

/** The legs' ledger record: a payout's movement, stamped with the grant's token. */
export function legsMeta(payoutId: string, token: FencingToken): MovementMeta {
  return { kind: 'PAYOUT', payoutId, fence: token };
}

/** Two answers describe the same write (an error by what it stores: code, message, details). */
export function sameOutcome(a: WriteOutcome, b: WriteOutcome): boolean {
  const stored = (o: WriteOutcome) =>
    o.kind === 'ok'
      ? { body: o.body }
      : { code: o.error.code, message: o.error.message, details: o.error.details };
  return isDeepStrictEqual(stored(a), stored(b));
}

/**
 * The command on the fast path, from the payout and account as read without a
 * lock; null when the transactional path must run instead: a check refuses
 * (it then answers the refusal), the account's currency is not the legs', or
 * their clearing account is not yet known to exist (the statement creates no
 * account). Pure: it may run before the transactional path runs again.
 */
export function fastTransition<T extends object>(
  cmd: PayoutCommand<T>,
  found: { payout: Payout; account: { balanceMinor: number; currency: string } },
  knownAccount: (accountId: string) => boolean,
): FastPlan<T> | null {
  const before = found.payout;
  if (!cmd.fastPath || cmd.refusal(before) !== null) return null;
  const step = cmd.step(before);
  const { legs } = step;
  if (legs && (found.account.currency !== legs.currency || !knownAccount(legs.credit))) return null;
  const token = cmd.grant.token;
  const meta = legsMeta(before.payoutId, token);
  const entries = legs
    ? newEntries(balancedPair(legs.debit, legs.credit, legs.amountMinor), meta)
    : [];
  // The statement pins the account as read: the balance after is the one read less the amount.
  const balanceMinor = legs ? found.account.balanceMinor - legs.amountMinor : null;
  // An admitted write sets the account's fence to its token.
  const expected: Written = {
    before,
    after: predicted(before, step, token),
    fence: token,
    entries,
    balanceMinor,
  };
  const outcome = step.answer(expected);
  if (outcome.kind !== 'ok') return null;
  return {
    to: expected.after.state,
    patch: patchOf(before, step, token),
    log: logOf(before, step, cmd.grant),
    funded: step.funded !== undefined,
    movement: legs && { entries, meta },
    outcome,
    verify: (after, balanceAfter) => {
      const written = { ...expected, after, balanceMinor: legs ? balanceAfter : null };
      assert.ok(
        sameOutcome(step.answer(written), outcome),
        'the recorded answer must describe the committed rows',
      );
    },
  };
}
