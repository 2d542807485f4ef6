import { errorCodeSpec, type ErrorCode, type ErrorEnvelope } from './error-codes';

export interface DlockErrorOptions {
  details?: Record<string, unknown>;
  retryAfterMillis?: number;
  /** Overrides the catalogue's status where C3 does (a rail decline is 422 VALIDATION_FAILED). */
  httpStatus?: number;
  traceId?: string;
  cause?: unknown;
}

/**
 * Base of every error that carries a contract code. Servers throw it and the
 * global filter renders it; the SDK rebuilds it from a response envelope.
 */
export class DlockError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly retrySafe: boolean;
  readonly details?: Record<string, unknown>;
  readonly retryAfterMillis?: number;
  readonly traceId?: string;

  constructor(code: ErrorCode, message: string, options: DlockErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    const spec = errorCodeSpec(code);
    this.httpStatus = options.httpStatus ?? spec.httpStatus;
    this.retrySafe = spec.retrySafe;
    this.details = options.details;
    this.retryAfterMillis = options.retryAfterMillis;
    this.traceId = options.traceId;
  }
}

export class InvalidTokenError extends DlockError {
  constructor(field: string, reason: string) {
    super('INVALID_TOKEN', `${field} is ${reason}`, { details: { field } });
  }
}

export interface ValidationFailure {
  field: string;
  message: string;
}

export class ValidationError extends DlockError {
  constructor(fields: ValidationFailure[], message = 'request validation failed') {
    super('VALIDATION_FAILED', message, { details: { fields } });
  }
}

/** The lock this handle names is gone: expired, revoked, or its session died (FR-12). */
export class LockLostError extends DlockError {
  constructor(message = 'lock lost', options: DlockErrorOptions = {}) {
    super('LOCK_LOST', message, options);
  }
}

/** A guard rejected the token: a newer holder exists. Never retry (NFR-06). */
export class FencedOutError extends DlockError {
  constructor(message = 'fenced out', options: DlockErrorOptions = {}) {
    super('FENCED_OUT', message, options);
  }
}

/** The acquire budget is spent, or the server throttled the caller. */
export class ContentionError extends DlockError {
  constructor(message = 'lock contended', options: DlockErrorOptions = {}) {
    super('CONTENTION_EXCEEDED', message, options);
  }
}

/** The session is gone (unknown or expired); every lock attached to it is gone too. */
export class SessionLostError extends DlockError {
  constructor(
    code: 'SESSION_UNKNOWN' | 'SESSION_EXPIRED',
    message: string,
    options: DlockErrorOptions = {},
  ) {
    super(code, message, options);
  }
}

/** Rebuilds a typed error from a contract envelope received over the wire. */
export function errorFromEnvelope(envelope: ErrorEnvelope, httpStatus: number): DlockError {
  const options: DlockErrorOptions = {
    details: envelope.details,
    retryAfterMillis: envelope.retryAfterMillis,
    httpStatus,
    traceId: envelope.traceId,
  };
  switch (envelope.code) {
    case 'LOCK_LOST':
      return new LockLostError(envelope.message, options);
    case 'FENCED_OUT':
      return new FencedOutError(envelope.message, options);
    case 'CONTENTION_EXCEEDED':
      return new ContentionError(envelope.message, options);
    case 'SESSION_UNKNOWN':
    case 'SESSION_EXPIRED':
      return new SessionLostError(envelope.code, envelope.message, options);
    default:
      return new DlockError(envelope.code, envelope.message, options);
  }
}
