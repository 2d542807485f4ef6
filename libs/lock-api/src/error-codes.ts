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
 * a fenced request whose grant proof or signed instruction does not prove
 * what it asserts (docs/security.md, "Signed grants").
 *
 * This library knows the lock service's codes and those every service answers; an app adds
 * its own with {@link registerErrorCodes} when its module loads (docs/extending.md, "Your own
 * error codes"), and names them in types by adding them to {@link RegisteredErrorCodes}.
 */
export const BUILT_IN_ERROR_CODES = {
  LOCK_CONTENDED: { httpStatus: 409, retrySafe: true },
  CONTENTION_EXCEEDED: { httpStatus: 429, retrySafe: true },
  NOT_LEADER: { httpStatus: 503, retrySafe: true },
  LOCK_LOST: { httpStatus: 409, retrySafe: false },
  SESSION_UNKNOWN: { httpStatus: 404, retrySafe: false },
  SESSION_EXPIRED: { httpStatus: 410, retrySafe: false },
  INVALID_TOKEN: { httpStatus: 400, retrySafe: false },
  FENCED_OUT: { httpStatus: 409, retrySafe: false },
  IDEMPOTENCY_CONFLICT: { httpStatus: 422, retrySafe: false },
  VALIDATION_FAILED: { httpStatus: 400, retrySafe: false },
  NOT_FOUND: { httpStatus: 404, retrySafe: false },
  UNAVAILABLE: { httpStatus: 503, retrySafe: true },
  INTERNAL: { httpStatus: 500, retrySafe: false },
  UNAUTHENTICATED: { httpStatus: 401, retrySafe: true },
  FORBIDDEN: { httpStatus: 403, retrySafe: false },
  REVOCATION_ALREADY_APPROVED: { httpStatus: 409, retrySafe: false },
  REVOCATION_REQUEST_EXPIRED: { httpStatus: 410, retrySafe: false },
  PROOF_REJECTED: { httpStatus: 403, retrySafe: false },
} as const satisfies ErrorCatalogue;

/** What a code means on the wire: its HTTP status and whether the identical request may be re-sent. */
export interface ErrorCodeSpec {
  readonly httpStatus: number;
  readonly retrySafe: boolean;
}

export type ErrorCatalogue = Readonly<Record<string, ErrorCodeSpec>>;

/**
 * The codes apps add, for the type checker only: an app that registers codes declares them here
 * (`declare module '@dlock/lock-api' { interface RegisteredErrorCodes { MY_CODE: true } }`), so
 * a misspelt code does not compile. Whether a code may be answered is decided at run time, by
 * what this process registered.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface RegisteredErrorCodes {}

export type ErrorCode = keyof typeof BUILT_IN_ERROR_CODES | keyof RegisteredErrorCodes;

/** `UPPER_SNAKE`: what docs/contract.md's catalogue spells. */
const ERROR_CODE_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

const catalogue = new Map<string, ErrorCodeSpec>(Object.entries(BUILT_IN_ERROR_CODES));

/**
 * Adds an app's codes to those this process may answer and understand. Registering a code again
 * with the same meaning is harmless; with another status or retry-safety it throws, since two
 * meanings of one code on the wire would mislead every client.
 */
export function registerErrorCodes(codes: ErrorCatalogue): void {
  for (const [code, spec] of Object.entries(codes)) {
    if (!ERROR_CODE_NAME.test(code))
      throw new Error(`error code ${JSON.stringify(code)} is not UPPER_SNAKE`);
    if (!Number.isInteger(spec.httpStatus) || spec.httpStatus < 400 || spec.httpStatus > 599) {
      throw new Error(`error code ${code}: httpStatus ${spec.httpStatus} is not a 4xx or 5xx`);
    }
    const known = catalogue.get(code);
    if (
      known !== undefined &&
      (known.httpStatus !== spec.httpStatus || known.retrySafe !== spec.retrySafe)
    ) {
      throw new Error(
        `error code ${code} is already registered as ${JSON.stringify(known)}, not ${JSON.stringify(spec)}`,
      );
    }
    catalogue.set(code, { httpStatus: spec.httpStatus, retrySafe: spec.retrySafe });
  }
}

/** Every code this process knows, built-in first, then in the order apps registered them. */
export function errorCodes(): ErrorCode[] {
  return [...catalogue.keys()] as ErrorCode[];
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && catalogue.has(value);
}

/** A code's meaning; throws for one this process never registered (never a guessed default). */
export function errorCodeSpec(code: ErrorCode): ErrorCodeSpec {
  const spec = catalogue.get(code);
  if (spec === undefined) {
    throw new Error(
      `error code ${code} was never registered: the app registers its codes (registerErrorCodes) before it serves`,
    );
  }
  return spec;
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
