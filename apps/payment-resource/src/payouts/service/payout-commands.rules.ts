import assert from 'node:assert/strict';
import type { FencedGrantHeaders } from '@dlock/http-contract';
import { DlockError, formatFencingToken } from '@dlock/lock-api';
import {
  transition,
  type AbandonRequest,
  type AbandonResponse,
  type ClaimRequest,
  type ClaimResponse,
  type PayoutEvent,
  type PostRequest,
  type PostResponse,
  type RailOutcomeKind,
  type RailOutcomeRequest,
  type RailOutcomeResponse,
  type ResolveRequest,
  type ResolveResponse,
  type TransitionView,
} from '@dlock/payout-contract';
import { clearingAccountFor, directionOf } from '../../ledger/domain/ledger.rules';
import type { Payout, PayoutPatch } from '../persistence/payout.repository';
import type { OperatorCommand, PayoutCommand, Refusal, Written } from './payout-command.types';
import { receiptRefusal, type Evidence } from './receipt-check.service';

/**
 * The payout commands of docs/payment-resource.md ("The payout state
 * machine", "Endpoints"), each described once: FencedWriter runs both its
 * one-statement path and its transactional fallback from this description.
 */

/** P2: claim, from the state the caller read; funds are checked from PENDING only. */
export function claimCommand(
  payoutId: string,
  grant: FencedGrantHeaders,
  body: ClaimRequest,
): PayoutCommand<ClaimResponse> {
  const claimed = (w: Written) => ok(claimBody(w, grant));
  const patch = { claimedBy: grant.ownerId, incrementAttempts: true, stampClaimedAt: true };
  return {
    ...fenced('claim', 'claim', payoutId, grant, body),
    continuation: false,
    refusal: (p) =>
      p.state === body.expectedState
        ? notAllowed(p, 'CLAIM')
        : { kind: 'stale-claim', expectedState: body.expectedState },
    step: (p) => ({
      event: 'CLAIM',
      patch,
      answer: claimed,
      ...(p.state === 'PENDING' && {
        funded: {
          short: (availableMinor) => ({
            event: 'CLAIM_INSUFFICIENT_FUNDS',
            patch: { ...patch, failureReason: 'INSUFFICIENT_FUNDS', stampSettledAt: true },
            answer: (w) => ({
              kind: 'committed-error',
              error: insufficientFunds(w, availableMinor),
            }),
          }),
        },
      }),
    }),
  };
}

const RAIL_EVENT: Record<RailOutcomeKind, PayoutEvent> = {
  SUBMITTED: 'RAIL_SUBMITTED',
  ACKED: 'RAIL_ACKED',
  REJECTED: 'RAIL_REJECTED',
  AMBIGUOUS: 'RAIL_AMBIGUOUS',
};

/**
 * P6: what the rail answered, recorded by the holder (docs/contract.md).
 * SUBMITTED answers the instruction the rail-proxy admits the submission on.
 */
export function railOutcomeCommand(
  payoutId: string,
  grant: FencedGrantHeaders,
  body: RailOutcomeRequest,
  evidence: Evidence | null,
  instruction: (payout: Payout) => string,
): PayoutCommand<RailOutcomeResponse> {
  const event = RAIL_EVENT[body.outcome];
  return {
    ...fenced('rail_outcome', `rail-outcome:${body.outcome}`, payoutId, grant, body),
    refusal: (p) => railRefusal(p, event, body.submissionId, evidence),
    step: (p) => {
      const extra = {
        outcome: body.outcome,
        ...(body.outcome === 'SUBMITTED' && { railInstruction: instruction(p) }),
      };
      return {
        event,
        patch: railPatch(body),
        reason: body.reason,
        answer: (w) => ok(transitionBody(w, extra)),
      };
    },
  };
}

/**
 * P3: both ledger legs and both balances with the state change (INV-03); the
 * clearing account (shard) takes the credit leg.
 */
export function postCommand(
  payoutId: string,
  grant: FencedGrantHeaders,
  body: PostRequest,
  evidence: Evidence,
  clearingShards: number,
): PayoutCommand<PostResponse> {
  return {
    ...fenced('post', 'post', payoutId, grant, body),
    refusal: (p) => railRefusal(p, 'POST', body.submissionId, evidence),
    step: (p) => ({
      event: 'POST',
      patch: {
        submissionId: body.submissionId,
        railReference: body.railReference,
        stampSettledAt: true,
      },
      legs: {
        debit: p.accountId,
        credit: clearingAccountFor(p.currency, p.payoutId, clearingShards),
        amountMinor: p.amountMinor,
        currency: p.currency,
      },
      answer: (w) => ok(postBody(w, grant)),
    }),
  };
}

/** P8: the reconciler's only way out of RAIL_AMBIGUOUS, on the rail's record as the proxy receipted it. */
export function resolveCommand(
  payoutId: string,
  grant: FencedGrantHeaders,
  body: ResolveRequest,
  evidence: Evidence,
): PayoutCommand<ResolveResponse> {
  const event: PayoutEvent = body.resolution === 'ACKED' ? 'RESOLVE_ACKED' : 'RESOLVE_NOT_FOUND';
  const patch: Omit<PayoutPatch, 'state'> = {
    submissionId: body.submissionId,
    railReference: body.railReference,
    ...(body.resolution === 'NOT_FOUND' && {
      failureReason: 'RAIL_NOT_FOUND',
      stampSettledAt: true,
    }),
  };
  return {
    ...fenced('resolve', 'resolve', payoutId, grant, body),
    // Rare (the reconciler's): the transactional path only.
    fastPath: false,
    refusal: (p) => railRefusal(p, event, body.submissionId, evidence),
    step: () => ({
      event,
      patch,
      reason: body.evidence,
      answer: (w) => ok(transitionBody(w, { resolution: body.resolution })),
    }),
  };
}

/**
 * P7: operator cancel, no token. An ambiguous payout is abandoned only once
 * its ambiguity is older than the SLA, by the database's clock.
 */
export function abandonCommand(
  payoutId: string,
  body: AbandonRequest,
  ambiguousSlaMs: number,
): OperatorCommand<AbandonResponse> {
  const eventOf = (p: Payout, pastSla: boolean): PayoutEvent =>
    p.state === 'RAIL_AMBIGUOUS' && pastSla ? 'ABANDON_AFTER_SLA' : 'ABANDON';
  return {
    payoutId,
    actor: { ownerId: body.operator, token: null },
    asksSlaIn: 'RAIL_AMBIGUOUS',
    ambiguousSlaMs,
    refusal: (p, pastSla) => notAllowed(p, eventOf(p, pastSla), { ambiguousSlaMs }),
    step: (p, pastSla) => ({
      event: eventOf(p, pastSla),
      patch: {
        failureReason: `ABANDONED by ${body.operator}: ${body.reason}`,
        stampSettledAt: true,
      },
      reason: body.reason,
      answer: ({ before, after }) =>
        ok({
          payoutId,
          state: after.state,
          previousState: before.state,
          operator: body.operator,
          reason: body.reason,
          abandonedAt: after.settledAt?.toISOString() ?? null,
        }),
    }),
  };
}

/** What every fenced command shares; P3, P6 and P8 continue the critical section their claim opened. */
function fenced(
  metric: PayoutCommand<object>['metric'],
  operation: string,
  payoutId: string,
  grant: FencedGrantHeaders,
  request: object,
): Omit<PayoutCommand<object>, 'refusal' | 'step'> {
  return { metric, operation, payoutId, grant, request, continuation: true, fastPath: true };
}

/** The table decides (INV-08). */
function notAllowed(
  payout: Payout,
  event: PayoutEvent,
  details?: Record<string, unknown>,
): Refusal | null {
  return transition(payout.state, event).allowed ? null : { kind: 'not-allowed', event, details };
}

/** The checks of a write that records the rail's answer: the table, the submission, the receipt. */
function railRefusal(
  payout: Payout,
  event: PayoutEvent,
  submissionId: string | undefined,
  evidence: Evidence | null,
): Refusal | null {
  const error = evidence && receiptRefusal(evidence, payout);
  return (
    notAllowed(payout, event) ??
    otherSubmission(payout, submissionId) ??
    (error ? { kind: 'receipt', error } : null)
  );
}

/** An outcome naming another submission than the one recorded (INV-02). */
function otherSubmission(payout: Payout, submissionId: string | undefined): Refusal | null {
  return submissionId !== undefined &&
    payout.submissionId !== null &&
    payout.submissionId.toLowerCase() !== submissionId.toLowerCase()
    ? { kind: 'other-submission', submissionId }
    : null;
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

function ok<T extends object>(body: T): { kind: 'ok'; body: T } {
  return { kind: 'ok', body };
}

/** P2's 200 body. */
function claimBody({ after, fence }: Written, grant: FencedGrantHeaders): ClaimResponse {
  return {
    payoutId: after.payoutId,
    state: after.state,
    claimToken: formatFencingToken(grant.token),
    accountFence: formatFencingToken(fence),
    attemptCount: after.attemptCount,
    idempotencyKey: grant.idempotencyKey,
  };
}

function insufficientFunds({ after }: Written, availableMinor: number): DlockError {
  return new DlockError(
    'INSUFFICIENT_FUNDS',
    'the account cannot fund this payout; it is now FAILED and must not reach the rail',
    {
      details: {
        payoutId: after.payoutId,
        accountId: after.accountId,
        state: after.state,
        amountMinor: after.amountMinor,
        availableMinor,
      },
    },
  );
}

/** P6's and P8's 200 body. */
function transitionBody<E extends object>(
  { before, after, fence }: Written,
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
    accountFence: formatFencingToken(fence),
  };
}

/** P3's 200 body: the legs as booked and the account's balance after them. */
function postBody(
  { after, entries, balanceMinor }: Written,
  grant: FencedGrantHeaders,
): PostResponse {
  assert.ok(balanceMinor !== null, 'a post books legs');
  return {
    payoutId: after.payoutId,
    state: after.state,
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
