/**
 * The error-code catalogue of the wire contract (docs/contract.md) as data.
 *
 * `retrySafe` answers "may the identical request be re-sent with the same token
 * without risking a duplicate side effect?" — not "was it transient".
 * NOT_FOUND, UNAVAILABLE and INTERNAL are this project's additions for the
 * envelope of an unknown resource/route, a failing readiness probe and an
 * unexpected server fault (README.md, "Wire conventions"). UNAUTHENTICATED and FORBIDDEN are
 * the identity layer's refusals (docs/security.md): nothing was done, so a
 * request refused for a stale token may be re-sent with a fresh one.
 * REVOCATION_ALREADY_APPROVED and REVOCATION_REQUEST_EXPIRED answer the
 * approval of a two-person force-revoke (docs/security.md): the request was
 * used, or its window closed; a new request is needed. PROOF_REJECTED refuses
 * a fenced request whose grant proof or payout instruction does not prove
 * what it asserts (docs/security.md, "Signed grants").
 */
export const ERROR_CATALOGUE = {
  LOCK_CONTENDED: { httpStatus: 409, retrySafe: true },
  CONTENTION_EXCEEDED: { httpStatus: 429, retrySafe: true },
  NOT_LEADER: { httpStatus: 503, retrySafe: true },
  LOCK_LOST: { httpStatus: 409, retrySafe: false },
  SESSION_UNKNOWN: { httpStatus: 404, retrySafe: false },
  SESSION_EXPIRED: { httpStatus: 410, retrySafe: false },
  INVALID_TOKEN: { httpStatus: 400, retrySafe: false },
  FENCED_OUT: { httpStatus: 409, retrySafe: false },
  PAYOUT_NOT_CLAIMABLE: { httpStatus: 409, retrySafe: false },
  DUPLICATE_SUBMISSION: { httpStatus: 409, retrySafe: false },
  INSUFFICIENT_FUNDS: { httpStatus: 422, retrySafe: false },
  IDEMPOTENCY_CONFLICT: { httpStatus: 422, retrySafe: false },
  RAIL_UNAVAILABLE: { httpStatus: 503, retrySafe: true },
  RAIL_AMBIGUOUS: { httpStatus: 409, retrySafe: false },
  VALIDATION_FAILED: { httpStatus: 400, retrySafe: false },
  NOT_FOUND: { httpStatus: 404, retrySafe: false },
  UNAVAILABLE: { httpStatus: 503, retrySafe: true },
  INTERNAL: { httpStatus: 500, retrySafe: false },
  UNAUTHENTICATED: { httpStatus: 401, retrySafe: true },
  FORBIDDEN: { httpStatus: 403, retrySafe: false },
  REVOCATION_ALREADY_APPROVED: { httpStatus: 409, retrySafe: false },
  REVOCATION_REQUEST_EXPIRED: { httpStatus: 410, retrySafe: false },
  PROOF_REJECTED: { httpStatus: 403, retrySafe: false },
} as const satisfies Record<string, { httpStatus: number; retrySafe: boolean }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CATALOGUE, value);
}

/** The error envelope every non-2xx response carries (docs/contract.md). */
export interface ErrorEnvelope {
  code: ErrorCode;
  message: string;
  retrySafe: boolean;
  retryAfterMillis?: number;
  details?: Record<string, unknown>;
  traceId: string;
}
