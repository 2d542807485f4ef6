import { HttpException, HttpStatus } from '@nestjs/common';
import { DlockError, errorCodeSpec, type ErrorCode, type ErrorEnvelope } from '@dlock/lock-api';
import { databaseFailure } from './db-errors';

export interface RenderedError {
  status: number;
  body: ErrorEnvelope;
  /** True when the error is not one we expected: log it with its stack. */
  unexpected: boolean;
}

/** What kind of thing was thrown; the switch below must handle every kind. */
type Thrown =
  | { kind: 'domain'; error: DlockError }
  | { kind: 'http'; error: HttpException }
  | { kind: 'body-parser'; status: number; type: string; message: string }
  | { kind: 'unknown'; error: unknown };

function classify(error: unknown): Thrown {
  if (error instanceof DlockError) return { kind: 'domain', error };
  if (error instanceof HttpException) return { kind: 'http', error };
  if (typeof error === 'object' && error !== null && 'type' in error && 'status' in error) {
    const e = error as { type: unknown; status: unknown; message?: unknown };
    if (typeof e.type === 'string' && typeof e.status === 'number') {
      return {
        kind: 'body-parser',
        status: e.status,
        type: e.type,
        message: typeof e.message === 'string' ? e.message : '',
      };
    }
  }
  return { kind: 'unknown', error };
}

function envelope(
  code: ErrorCode,
  message: string,
  traceId: string,
  extra: { details?: Record<string, unknown>; retryAfterMillis?: number } = {},
): ErrorEnvelope {
  const body: ErrorEnvelope = {
    code,
    message,
    retrySafe: errorCodeSpec(code).retrySafe,
    traceId,
  };
  if (extra.retryAfterMillis !== undefined) body.retryAfterMillis = extra.retryAfterMillis;
  if (extra.details !== undefined) body.details = extra.details;
  return body;
}

function fromHttpException(error: HttpException, traceId: string): RenderedError {
  const status = error.getStatus();
  switch (status) {
    case HttpStatus.NOT_FOUND:
      return {
        status,
        body: envelope('NOT_FOUND', 'no such resource or route', traceId),
        unexpected: false,
      };
    case HttpStatus.METHOD_NOT_ALLOWED:
      return {
        status,
        body: envelope('NOT_FOUND', 'method not allowed on this route', traceId),
        unexpected: false,
      };
    case HttpStatus.PAYLOAD_TOO_LARGE:
      return {
        status,
        body: envelope('VALIDATION_FAILED', 'request body too large', traceId),
        unexpected: false,
      };
    case HttpStatus.SERVICE_UNAVAILABLE: {
      const response = error.getResponse();
      const details =
        typeof response === 'object' ? (response as Record<string, unknown>) : undefined;
      return {
        status,
        body: envelope('UNAVAILABLE', 'service not ready', traceId, { details }),
        unexpected: false,
      };
    }
    default:
      if (status >= 400 && status < 500) {
        return {
          status: 400,
          body: envelope('VALIDATION_FAILED', error.message, traceId),
          unexpected: false,
        };
      }
      return {
        status: 500,
        body: envelope('INTERNAL', 'internal error', traceId),
        unexpected: true,
      };
  }
}

/** Methods whose handlers never write: a connection lost mid-statement changed nothing. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A database failure the service did not map itself is 503 UNAVAILABLE
 * (retry-safe) when no statement was sent, or when the request only reads.
 * A write whose connection broke mid-statement may have committed: it stays
 * the 500 INTERNAL (not retry-safe) it always was (README, Wire conventions).
 */
function fromDatabaseFailure(error: unknown, traceId: string, method: string): RenderedError {
  const failure = databaseFailure(error);
  if (failure === 'not-sent' || (failure === 'lost' && READ_METHODS.has(method))) {
    return {
      status: 503,
      body: envelope('UNAVAILABLE', 'a database this service needs is unavailable', traceId),
      unexpected: false,
    };
  }
  return { status: 500, body: envelope('INTERNAL', 'internal error', traceId), unexpected: true };
}

/**
 * Maps anything thrown to the contract's envelope (docs/contract.md). Domain errors carry
 * their code; framework errors map to the nearest code; an unavailable
 * database is 503 (fromDatabaseFailure); anything else is a fixed 500 that
 * reveals nothing but the trace id. `method` is the request's HTTP method.
 */
export function renderError(error: unknown, traceId: string, method = 'POST'): RenderedError {
  const thrown = classify(error);
  switch (thrown.kind) {
    case 'domain': {
      const e = thrown.error;
      return {
        status: e.httpStatus,
        body: envelope(e.code, e.message, traceId, {
          details: e.details,
          retryAfterMillis: e.retryAfterMillis,
        }),
        unexpected: false,
      };
    }
    case 'http':
      return fromHttpException(thrown.error, traceId);
    case 'body-parser':
      if (thrown.status === 415) {
        return {
          status: 415,
          body: envelope(
            'VALIDATION_FAILED',
            `unsupported request body encoding (${thrown.type}): send identity-encoded JSON`,
            traceId,
          ),
          unexpected: false,
        };
      }
      if (thrown.status === 413) {
        return {
          status: 413,
          body: envelope('VALIDATION_FAILED', 'request body too large', traceId),
          unexpected: false,
        };
      }
      if (thrown.status >= 400 && thrown.status < 500) {
        return {
          status: 400,
          body: envelope('VALIDATION_FAILED', `unreadable request body (${thrown.type})`, traceId),
          unexpected: false,
        };
      }
      return {
        status: 500,
        body: envelope('INTERNAL', 'internal error', traceId),
        unexpected: true,
      };
    case 'unknown':
      return fromDatabaseFailure(thrown.error, traceId, method);
    default: {
      const exhaustive: never = thrown;
      return exhaustive;
    }
  }
}
