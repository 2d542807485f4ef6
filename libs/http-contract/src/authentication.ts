import { createParamDecorator, Logger, type ExecutionContext } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingHttpHeaders } from 'node:http';
import { counter } from '@dlock/metrics';
import type { Counter } from 'prom-client';
import { ContentionError, DlockError } from '@dlock/lock-api';
import {
  ForbiddenError,
  TokenVerifier,
  UnauthenticatedError,
  type AuthPolicy,
  type VerifiedIdentity,
  type VerifierOptions,
} from '@dlock/identity';
import { JWKS_PATH, OPENAPI_PATH } from './openapi';
import { RefusalLimiter, type LogDecision, type RefusalLimits } from './refusal-limits';
import type { AdmissionLimits, InFlightAdmission } from './admission';
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
 * service's audience is its own name. `operator` verifies the people a
 * delegating caller acts for (default: the same issuer and keys, audience
 * `console`; docs/security.md).
 */
export type AuthOptions = Omit<VerifierOptions, 'audience'> & {
  policyFile: string;
  operator?: VerifierOptions;
  /** Limits on callers without a valid token; none when left out (docs/security.md, "Limits"). */
  refusals?: RefusalLimits;
  /** Requests in flight per identity, shed before authentication; none when left out. */
  admission?: AdmissionLimits;
};

/** Why a request was refused: the `refusal` label of `auth_refusals_total`. */
export const REFUSAL_KINDS = ['unauthenticated', 'forbidden', 'policy'] as const;
export type RefusalKind = (typeof REFUSAL_KINDS)[number];

function refusalCounter(): Counter<'refusal'> {
  return counter({
    name: 'auth_refusals_total',
    help: 'Requests refused for their identity (401 unauthenticated, 403 forbidden or policy)',
    labelNames: ['refusal'],
  });
}

/**
 * `auth_refusals_total` with every `refusal` at 0, for a process that refuses requests: in
 * /metrics from the start, not from the first refusal (docs/security.md), so a query or an
 * `increase()` sees the first one too.
 */
export function countAuthRefusalsFromStart(): void {
  const refusals = refusalCounter();
  for (const refusal of REFUSAL_KINDS) refusals.inc({ refusal }, 0);
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
  sampled: LogDecision = { log: true, suppressed: 0 },
): void {
  if (recorded.has(err)) return;
  recorded.add(err);
  const refusal = kind ?? (err.code === 'FORBIDDEN' ? 'forbidden' : 'unauthenticated');
  refusalCounter().inc({ refusal });
  if (!sampled.log) return;
  logger.warn(
    {
      event: 'auth_refused',
      refusal,
      reason: err.message,
      subject,
      method: req.method,
      path: req.path,
      traceId: requestTraceId(req),
      // Refusals counted but not logged since the last line (sampled, docs/security.md "Limits").
      ...(sampled.suppressed > 0 ? { suppressed: sampled.suppressed } : {}),
    },
    `request refused: ${err.message}`,
  );
}

/** The header a delegating caller (the console) names the person it acts for in (docs/security.md). */
export const ACTING_FOR_HEADER = 'x-acting-for';

/**
 * What the gate checks a request against: the service's own tokens, people's
 * tokens forwarded in X-Acting-For (audience `console` unless configured), and
 * the policy, which must grant the forwarding caller `identity.act-for`.
 */
export interface AuthGate {
  verifier: TokenVerifier;
  operatorVerifier: TokenVerifier;
  policy: AuthPolicy;
  /** Per-source limit and log sampling of the gate's refusals; none when left out. */
  refusals?: RefusalLimiter;
  /** Per-identity requests in flight, refused before their token is checked; none when left out. */
  admission?: InFlightAdmission;
}

/** Who a request acts as, or why it is refused (and as which refusal it is counted). */
export type GateOutcome =
  { identity: VerifiedIdentity } | { refused: DlockError; kind: RefusalKind; subject?: string };

const unauthenticated = (err: unknown, subject?: string): GateOutcome => {
  if (!(err instanceof UnauthenticatedError)) throw err;
  return { refused: err, kind: 'unauthenticated', subject };
};

/**
 * The identity of a request from its headers (docs/security.md). Without
 * X-Acting-For it is the service token's; with it, the caller must be allowed
 * `identity.act-for` (else 403, refusal `policy`) and the forwarded token must
 * verify as a person's (else 401): the request is then that person's, with
 * the caller kept as `via`, so the policy, owner checks and audit see the person.
 */
export async function authenticateHeaders(
  headers: IncomingHttpHeaders,
  gate: AuthGate,
): Promise<GateOutcome> {
  let caller: VerifiedIdentity;
  try {
    caller = await gate.verifier.verify(headers.authorization);
  } catch (err) {
    return unauthenticated(err);
  }
  let identity = caller;
  const actingFor = headers[ACTING_FOR_HEADER];
  if (actingFor !== undefined) {
    const decision = gate.policy.decide(caller.subject, 'identity.act-for');
    if (!decision.allowed) {
      const err = new ForbiddenError(
        `not allowed by the authorisation policy: ${decision.reason}`,
        {
          reason: 'policy',
          operation: 'identity.act-for',
        },
      );
      return { refused: err, kind: 'policy', subject: caller.subject };
    }
    let person: VerifiedIdentity;
    try {
      person = await gate.operatorVerifier.verifyJwt(actingFor, 'X-Acting-For');
    } catch (err) {
      return unauthenticated(err, caller.subject);
    }
    identity = {
      subject: person.subject,
      expiresAtMs: Math.min(person.expiresAtMs, caller.expiresAtMs),
      via: caller.subject,
    };
  }
  const owner = headers['x-owner-id'];
  if (owner !== undefined && owner !== identity.subject) {
    const err = new ForbiddenError('X-Owner-Id is not the authenticated identity', {
      field: 'X-Owner-Id',
    });
    return { refused: err, kind: 'forbidden', subject: identity.subject };
  }
  return { identity };
}

/**
 * The one authentication gate of every service: installed by
 * applyHttpContract before the body is read, so a refused request costs no
 * parsing and reaches no route. The owner a request acts as is the token's
 * subject (or the person a delegating caller acts for): an `X-Owner-Id`
 * naming anyone else is 403 (docs/security.md).
 */
export function authenticateRequests(app: NestExpressApplication, gate: AuthGate): void {
  const logger = new Logger('auth');
  countAuthRefusalsFromStart();
  app.use((req: AuthenticatedRequest & Request, res: Response, next: NextFunction) => {
    if (OPEN_PATHS.has(req.path)) return next();
    // An identity already at its limit is refused before any signature is checked.
    const shed = gate.admission?.shed(req, gate.verifier);
    if (shed !== undefined) return next(shed);
    authenticateHeaders(req.headers, gate).then(
      (outcome) => {
        if ('identity' in outcome) {
          req.identity = outcome.identity;
          // Counted as the token's own identity, the one `shed` reads from the next request.
          gate.admission?.hold(outcome.identity.via ?? outcome.identity.subject, req, res);
          return next();
        }
        next(refuse(logger, req, outcome, gate.refusals));
      },
      (err: unknown) => next(err),
    );
  });
}

/**
 * Records a gate refusal (its log line sampled when the gate has limits) and
 * returns what to answer: the refusal itself, or 429 CONTENTION_EXCEEDED once
 * the source address has spent its allowance of unauthenticated requests.
 */
function refuse(
  logger: Logger,
  req: AuthenticatedRequest & Request,
  outcome: Extract<GateOutcome, { refused: DlockError }>,
  limiter: RefusalLimiter | undefined,
): DlockError {
  const { refused, subject, kind } = outcome;
  if (limiter === undefined) {
    recordAuthRefusal(logger, req, refused, subject, kind);
    return refused;
  }
  const retryAfterMillis =
    kind === 'unauthenticated' ? limiter.admit(req.socket.remoteAddress ?? 'unknown') : 0;
  recordAuthRefusal(logger, req, refused, subject, kind, limiter.logLine());
  if (retryAfterMillis === 0) return refused;
  const { perSourceMax: limit, windowMs } = limiter.limits;
  return new ContentionError('too many unauthenticated requests from this address', {
    retryAfterMillis,
    details: { reason: 'unauthenticated-rate-limit', limit, windowMs },
  });
}

/**
 * A FORBIDDEN raised inside a route (a session or grant of another identity,
 * docs/security.md) is an `auth_refused` like the gate's own; called by the
 * exception filter for every error it renders.
 */
export function recordRouteRefusal(
  logger: Logger,
  req: AuthenticatedRequest & Request,
  err: unknown,
): void {
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
