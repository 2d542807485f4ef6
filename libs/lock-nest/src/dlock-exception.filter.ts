import { randomBytes } from 'node:crypto';
import {
  Catch,
  Injectable,
  Logger,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DlockError, type ErrorEnvelope } from '@dlock/lock-api';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The answer dlock's own services give for `error` (docs/contract.md): the
 * status of its code in the error catalogue (or the one it carries, e.g. a
 * lock-server's answer the SDK rebuilt) and the contract's envelope.
 */
export function dlockErrorResponse(
  error: DlockError,
  traceId: string,
): { status: number; body: ErrorEnvelope } {
  const body: ErrorEnvelope = {
    code: error.code,
    message: error.message,
    retrySafe: error.retrySafe,
    traceId,
  };
  if (error.retryAfterMillis !== undefined) body.retryAfterMillis = error.retryAfterMillis;
  if (error.details !== undefined) body.details = error.details;
  return { status: error.httpStatus, body };
}

/** The W3C trace id of the request's `traceparent`, or a fresh one, as the services do. */
export function traceIdOf(traceparent: string | string[] | undefined): string {
  const value = Array.isArray(traceparent) ? traceparent[0] : traceparent;
  const match = value ? TRACEPARENT.exec(value.trim().toLowerCase()) : null;
  return match && !/^0+$/.test(match[1]) ? match[1] : randomBytes(16).toString('hex');
}

/**
 * Answers every `DlockError` a controller lets through (the SDK's
 * ContentionError, LockLostError, FencedOutError, an unreachable lock-server's
 * UNAVAILABLE, …) with its code's HTTP status and the contract's JSON
 * envelope, so a caller of your service reads it as it reads a dlock service
 * (docs/extending.md, "Errors in your controllers"). Other exceptions are left
 * to Nest and your own filters. Register it with `APP_FILTER`,
 * `@UseFilters(DlockExceptionFilter)` or `app.useGlobalFilters(new
 * DlockExceptionFilter(app.get(HttpAdapterHost)))`; works on Express and Fastify.
 */
@Catch(DlockError)
@Injectable()
export class DlockExceptionFilter implements ExceptionFilter<DlockError> {
  private readonly logger = new Logger('dlock');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: DlockError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<{ headers: Record<string, string | string[] | undefined> }>();
    const { status, body } = dlockErrorResponse(error, traceIdOf(request.headers.traceparent));
    // A 5xx is ours to investigate; the error's own traceId names the lock-server's log line.
    if (status >= 500)
      this.logger.error(
        { code: error.code, traceId: body.traceId, upstreamTraceId: error.traceId, err: error },
        error.message,
      );
    this.adapterHost.httpAdapter.reply(http.getResponse(), body, status);
  }
}
