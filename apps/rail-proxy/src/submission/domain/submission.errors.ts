import { DlockError, formatFencingToken, isErrorCode } from '@dlock/lock-api';
import { databaseFailure } from '@dlock/http-contract';
import type { AmbiguityReason } from './rail-outcome.rules';
import type { StoredResponse, SubmissionRecord, SubmissionRequest } from './submission.types';

/** docs/payment-resource.md body: enough to alert on without a database query. */
export function fencedOutError(req: SubmissionRequest, highest: bigint): DlockError {
  return new DlockError(
    'FENCED_OUT',
    'presented token does not exceed the rail high-water mark of the account',
    {
      details: {
        presentedToken: formatFencingToken(req.presentedToken),
        highestToken: formatFencingToken(highest),
        resourceType: 'rail',
        resourceId: req.accountId,
        ownerId: req.ownerId,
      },
    },
  );
}

export function duplicateSubmissionError(
  req: SubmissionRequest,
  existing: SubmissionRecord,
): DlockError {
  return new DlockError(
    'DUPLICATE_SUBMISSION',
    'this payout already has a rail submission; resolve it from the existing record',
    {
      details: {
        payoutId: req.payoutId,
        existingSubmissionId: existing.submissionId,
        existingOutcome: existing.outcome,
        existingPresentedToken: formatFencingToken(existing.presentedToken),
      },
    },
  );
}

export type UnavailableReason =
  'rail-unreachable' | 'intent-not-committed' | 'connection-closed-before-write';

export function railUnavailableError(
  reason: UnavailableReason,
  cause: string,
  retryAfterMillis: number,
): DlockError {
  return new DlockError('RAIL_UNAVAILABLE', 'the rail was not reached; nothing was presented', {
    retryAfterMillis,
    details: { reason, cause },
  });
}

/**
 * How loudly an intent that could not be committed is logged. No connection to proxydb could
 * be had ('not-sent', libs/http-contract/src/db-errors.ts): nothing was written, the caller is
 * told to retry, and the global filter treats the same failure as an expected 503, so a warning.
 * Anything else (a statement that failed, a connection lost mid-transaction) is an error.
 */
export function intentFailureLevel(err: unknown): 'warn' | 'error' {
  return databaseFailure(err) === 'not-sent' ? 'warn' : 'error';
}

export type AmbiguousReason =
  | AmbiguityReason
  | 'outcome-not-recorded'
  | 'intent-withdrawal-failed'
  | 'original-attempt-unresolved';

export function railAmbiguousError(
  req: SubmissionRequest,
  submissionId: string | null,
  reason: AmbiguousReason,
  /** TIMEOUT once recorded; null when the record could not be resolved (still unresolved). */
  outcome: 'TIMEOUT' | null = 'TIMEOUT',
): DlockError {
  return new DlockError(
    'RAIL_AMBIGUOUS',
    'the submission was forwarded and its outcome is unknown; never resubmit',
    { details: { payoutId: req.payoutId, submissionId, outcome, reason } },
  );
}

/** docs/rail.md / docs/contract.md: a rail decline is 422 VALIDATION_FAILED, details.outcome REJECTED. */
export function railRejectedError(
  req: SubmissionRequest,
  submissionId: string,
  railStatus: number,
  railReceipt: string,
): DlockError {
  return new DlockError('VALIDATION_FAILED', 'the rail declined the transfer', {
    httpStatus: 422,
    details: { payoutId: req.payoutId, submissionId, outcome: 'REJECTED', railStatus, railReceipt },
  });
}

export function idempotencyConflictError(): DlockError {
  return new DlockError(
    'IDEMPOTENCY_CONFLICT',
    'this X-Idempotency-Key was already used with this token and a different body',
  );
}

export function storedError(error: DlockError): StoredResponse {
  return {
    status: error.httpStatus,
    error: {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
      ...(error.retryAfterMillis !== undefined ? { retryAfterMillis: error.retryAfterMillis } : {}),
    },
  };
}

/** Rebuilds the original answer of a replayed request (a new traceId is the only difference). */
export function replayedError(stored: Extract<StoredResponse, { error: unknown }>): DlockError {
  const code = stored.error.code;
  if (!isErrorCode(code)) throw new Error(`stored response carries an unknown code ${code}`);
  return new DlockError(code, stored.error.message, {
    httpStatus: stored.status,
    details: stored.error.details,
    retryAfterMillis: stored.error.retryAfterMillis,
  });
}
