import { PeerUnavailableError } from '@dlock/http-client';
import { DlockError, type ErrorCode } from '@dlock/lock-api';
import { isPayoutState, type PayoutView } from '@dlock/payout-contract';
import type { Step } from './attempt-labels.types';
import type { AttemptStep, Ending } from './attempt-step.types';
import { nextStepFor } from './recovery.rules';

/**
 * What each hop's failure means for the attempt, as pure functions of the
 * error (docs/executor.md § Outcomes). `undefined` means the error is not an
 * answer of that hop: the attempt gives up on it (classifyFailure).
 */

/** A downstream refused the request's content (400 VALIDATION_FAILED): resending it cannot help. */
export function isRefusedAsInvalid(err: unknown): err is DlockError {
  return err instanceof DlockError && err.code === 'VALIDATION_FAILED' && err.httpStatus === 400;
}

/** The refused field names, for the failure reason (no values: they may be ids). */
export function fieldsOf(err: DlockError): string {
  const fields = err.details?.fields;
  if (!Array.isArray(fields)) return 'VALIDATION_FAILED';
  const names = fields.map((f: unknown) => {
    const name = typeof f === 'object' && f !== null ? (f as { field?: unknown }).field : null;
    return typeof name === 'string' ? name : '?';
  });
  return `VALIDATION_FAILED: ${names.join(', ')}`.slice(0, 200);
}

/** payment-resource refused one of this attempt's requests as invalid; carries the step. */
export class RefusedByPaymentResource extends Error {
  constructor(
    readonly step: Step,
    readonly refusal: DlockError,
  ) {
    super(`payment-resource refused ${step} as invalid: ${refusal.message}`, { cause: refusal });
  }
}

function end(result: Ending): AttemptStep {
  return { to: 'end', result };
}

/** P2's two answers that are not errors: someone else moved the payout on, or the funds are short. */
export function afterClaimRefused(err: unknown, rereadIfMoved: boolean): AttemptStep | undefined {
  if (!(err instanceof DlockError)) return undefined;
  if (err.code === 'PAYOUT_NOT_CLAIMABLE') return afterNotClaimable(err, rereadIfMoved);
  if (err.code === 'INSUFFICIENT_FUNDS') {
    // The claim itself moved the payout to FAILED; it never reaches the rail.
    return end({ kind: 'failed', reason: 'INSUFFICIENT_FUNDS' });
  }
  return undefined;
}

/**
 * A claim refused because the payout is not in the state this worker read: a
 * lost race with another worker, not a safety event (docs/executor.md,
 * "Outcomes"). The refusal names the state it found under the row lock, so a
 * payout already finished or quarantined is left without reading it again;
 * any other state is read once and recovered by it.
 */
function afterNotClaimable(err: DlockError, rereadIfMoved: boolean): AttemptStep {
  const found = err.details?.state;
  if (isPayoutState(found)) {
    const next = nextStepFor(found);
    if (next.step === 'leave') return end({ kind: 'skipped', reason: next.why });
  }
  return rereadIfMoved ? { to: 'reread' } : end({ kind: 'skipped', reason: 'not-claimable' });
}

/**
 * The proxy's answers other than ACKED (docs/rail.md), and the transport failures.
 * Nothing here ever leads back to a submit: the one presentation is never repeated.
 */
export function afterSubmitFailure(view: PayoutView, err: unknown): AttemptStep | undefined {
  if (err instanceof PeerUnavailableError) {
    if (err.phase === 'connect') return end({ kind: 'abandoned', reason: 'proxy-unreachable' });
    // Connected, no answer: the proxy may have presented it. The payout stays
    // RAIL_SUBMITTED and the next holder resolves it from the proxy's record.
    return {
      to: 'end',
      result: { kind: 'abandoned', reason: 'submit-outcome-unknown' },
      alarm: `submit outcome unknown (no answer from the proxy: ${err.message}); left RAIL_SUBMITTED for recovery from the record`,
    };
  }
  if (!(err instanceof DlockError)) return undefined;
  const details = err.details ?? {};
  const submissionId = typeof details.submissionId === 'string' ? details.submissionId : undefined;
  switch (err.code) {
    case 'RAIL_AMBIGUOUS': {
      const reason = typeof details.reason === 'string' ? details.reason : 'timeout';
      return { to: 'quarantine', submissionId, why: `proxy: ${reason}` };
    }
    case 'VALIDATION_FAILED':
      return afterSubmitRefused(err, submissionId);
    case 'DUPLICATE_SUBMISSION':
      // A claim/lease boundary defect, not a rail problem: loud, then resolved from the record.
      return { to: 'resolve-from-record', view, duplicate: details };
    case 'RAIL_UNAVAILABLE':
      // Nothing was presented (docs/contract.md); a later pass finds no record and submits.
      return end({ kind: 'abandoned', reason: 'rail-unavailable' });
    default:
      return undefined; // FENCED_OUT and the rest: classifyFailure
  }
}

/**
 * VALIDATION_FAILED from the proxy: a rail decline (422 REJECTED, with the
 * proxy's receipt of it), or a refusal at its door (400). A door refusal
 * presented nothing, but this worker's word is no evidence the ledger moves
 * on (docs/rail.md, "Receipts"): the payout is quarantined, and the
 * reconciler ends it FAILED on the rail's record, receipted by the proxy.
 */
function afterSubmitRefused(
  err: DlockError,
  submissionId: string | undefined,
): AttemptStep | undefined {
  const railReceipt = err.details?.railReceipt;
  if (err.httpStatus === 422 && err.details?.outcome === 'REJECTED') {
    if (submissionId === undefined || typeof railReceipt !== 'string') {
      return { to: 'quarantine', submissionId, why: 'rail decline without its receipt' };
    }
    return { to: 'record-rejected', submissionId, why: 'rail declined the transfer', railReceipt };
  }
  if (err.httpStatus === 400) {
    return {
      to: 'quarantine',
      why: `rail-proxy refused the submission as invalid (${fieldsOf(err)}); nothing was presented to the rail`,
      refusal: { hop: 'rail_proxy', step: 'submit', error: err },
    };
  }
  return undefined;
}

/**
 * P6 ACKED refused as invalid: the rail took the money, so the payout cannot
 * end FAILED; it is quarantined for the reconciler and an operator, without
 * the refused values so the quarantine write is not refused too.
 */
export function afterAckedRefused(err: unknown): AttemptStep | undefined {
  if (!(err instanceof RefusedByPaymentResource)) return undefined;
  return {
    to: 'quarantine',
    why: 'payment-resource refused the ACKED outcome as invalid',
    refusal: { hop: 'payment_resource', step: err.step, error: err.refusal },
  };
}

/** Why an attempt gave up on an error no hop answered for. */
export type Failure =
  | { kind: 'invalid'; step: Step; refusal: DlockError }
  | { kind: 'fenced'; where: 'rail' | 'account'; highestToken: unknown }
  | { kind: 'lock-lost'; code: ErrorCode }
  | { kind: 'error'; code: ErrorCode | undefined };

/** FENCED_OUT is terminal for this worker; a lost lock leaves the payout for a fresh holder. */
export function classifyFailure(err: unknown): Failure {
  if (err instanceof RefusedByPaymentResource) {
    return { kind: 'invalid', step: err.step, refusal: err.refusal };
  }
  const code = err instanceof DlockError ? err.code : undefined;
  if (code === 'FENCED_OUT') {
    const details = (err as DlockError).details ?? {};
    const where = details.resourceType === 'rail' ? 'rail' : 'account';
    return { kind: 'fenced', where, highestToken: details.highestToken };
  }
  if (code === 'LOCK_LOST' || code === 'SESSION_EXPIRED' || code === 'SESSION_UNKNOWN') {
    return { kind: 'lock-lost', code };
  }
  return { kind: 'error', code };
}
