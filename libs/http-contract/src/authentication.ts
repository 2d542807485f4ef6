import { createParamDecorator, Logger, type ExecutionContext } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { Counter, register } from 'prom-client';
import { DlockError } from '@dlock/lock-api';
import {
  ForbiddenError,
  TokenVerifier,
  UnauthenticatedError,
  type VerifiedIdentity,
  type VerifierOptions,
} from '@dlock/identity';
import { JWKS_PATH, OPENAPI_PATH } from './openapi';
import { requestTraceId, type TracedRequest } from './trace';

/**
 * Probes, scrapers and the OpenAPI document need no identity; every other
 * path does (docs/security.md).
 */
export const OPEN_PATHS: ReadonlySet<string> = new Set([
  '/health/live',
  '/health/ready',
  '/metrics',
  OPENAPI_PATH,
  JWKS_PATH,
]);

export interface AuthenticatedRequest extends TracedRequest {
  /** Set by the authentication middleware before any route runs. */
  identity?: VerifiedIdentity;
}

/**
 * Where the keys are, who issues, and the authorisation policy file; this
 * service's audience is its own name.
 */
export type AuthOptions = Omit<VerifierOptions, 'audience'> & { policyFile: string };

/** Why a request was refused: the `refusal` label of `auth_refusals_total`. */
export type RefusalKind = 'unauthenticated' | 'forbidden' | 'policy';

function refusalCounter(): Counter {
  const name = 'auth_refusals_total';
  const existing = register.getSingleMetric(name);
  if (existing) return existing as Counter;
  return new Counter({
    name,
    help: 'Requests refused for their identity (401 unauthenticated, 403 forbidden or policy)',
    labelNames: ['refusal'],
  });
}

/** Refusals already recorded, so the exception filter does not record them twice. */
const recorded = new WeakSet<DlockError>();

/**
 * Records a refusal as the safety event `auth_refused` (a log line and
 * `auth_refusals_total{refusal}`); the subject goes to the log, never to a label.
 */
export function recordAuthRefusal(
  logger: Logger,
  req: TracedRequest & Request,
  err: DlockError,
  subject?: string,
  kind?: RefusalKind,
): void {
  if (recorded.has(err)) return;
  recorded.add(err);
  const refusal = kind ?? (err.code === 'FORBIDDEN' ? 'forbidden' : 'unauthenticated');
  refusalCounter().inc({ refusal });
  logger.warn(
    {
      event: 'auth_refused',
      refusal,
      reason: err.message,
      subject,
      method: req.method,
      path: req.path,
      traceId: requestTraceId(req),
    },
    `request refused: ${err.message}`,
  );
}

/**
 * The one authentication gate of every service: installed by
 * applyHttpContract before the body is read, so a refused request costs no
 * parsing and reaches no route. The owner a request acts as is the token's
 * subject: an `X-Owner-Id` naming anyone else is 403 (docs/security.md).
 */
export function authenticateRequests(app: NestExpressApplication, verifier: TokenVerifier): void {
  const logger = new Logger('auth');
  app.use((req: AuthenticatedRequest & Request, _res: Response, next: NextFunction) => {
    if (OPEN_PATHS.has(req.path)) return next();
    verifier.verify(req.headers.authorization).then(
      (identity) => {
        const owner = req.headers['x-owner-id'];
        if (owner !== undefined && owner !== identity.subject) {
          const err = new ForbiddenError('X-Owner-Id is not the authenticated identity', {
            field: 'X-Owner-Id',
          });
          recordAuthRefusal(logger, req, err, identity.subject);
          return next(err);
        }
        req.identity = identity;
        next();
      },
      (err: unknown) => {
        if (err instanceof UnauthenticatedError) recordAuthRefusal(logger, req, err);
        next(err);
      },
    );
  });
}

/**
 * A FORBIDDEN raised inside a route (a session or grant of another identity,
 * docs/security.md) is an `auth_refused` like the gate's own; called by the
 * exception filter for every error it renders.
 */
export function recordRouteRefusal(logger: Logger, req: AuthenticatedRequest & Request, err: unknown): void {
  if (!(err instanceof ForbiddenError)) return;
  recordAuthRefusal(logger, req, err, req.identity?.subject, 'forbidden');
}

/** The verified identity of the request (always present past the middleware). */
export function requestIdentity(req: AuthenticatedRequest): VerifiedIdentity {
  if (!req.identity) throw new UnauthenticatedError('request was not authenticated');
  return req.identity;
}

/** Route parameter: the caller's verified identity (docs/security.md). */
export const CallerIdentity = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): VerifiedIdentity =>
    requestIdentity(ctx.switchToHttp().getRequest<AuthenticatedRequest>()),
);
