import { ArgumentsHost, Catch, type ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { recordRouteRefusal } from './authentication';
import { renderError } from './envelope';
import { requestTraceId } from './trace';

/** The one global filter: every non-2xx leaves as the contract envelope. */
@Catch()
export class ContractExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    recordRouteRefusal(this.logger, req, exception);
    sendError(res, exception, requestTraceId(req), this.logger, req.method);
  }
}

export function sendError(
  res: Response,
  exception: unknown,
  traceId: string,
  logger: Logger,
  method?: string,
): void {
  const rendered = renderError(exception, traceId, method);
  if (rendered.unexpected) {
    logger.error({ err: exception, traceId }, 'unexpected error');
  }
  if (res.headersSent) return;
  res
    .status(rendered.status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(rendered.body));
}
