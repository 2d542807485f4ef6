import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { activeTraceFields } from '@dlock/tracing';

const logger = new Logger('http');

/**
 * At LOG_LEVEL=debug, one line per request on the routes served without the
 * request logger (ObservabilityOptions.untracedRoutes), so a payout's trace id
 * can be found in every service it crossed (docs/tracing.md). Not mounted at
 * other levels: those routes keep their low per-request cost.
 */
export function debugRequestLog(req: Request, res: Response, next: NextFunction): void {
  const startedMs = performance.now();
  const ids = activeTraceFields();
  res.once('finish', () =>
    logger.debug(
      {
        ...ids,
        req: { method: req.method, url: req.originalUrl },
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - startedMs),
      },
      'request completed',
    ),
  );
  next();
}
