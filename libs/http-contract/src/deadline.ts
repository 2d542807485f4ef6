import { createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import {
  DlockError,
  REQUEST_DEADLINE_HEADER,
  REQUEST_DEADLINE_MAX_MS,
  ValidationError,
  type ErrorCode,
} from '@dlock/lock-api';

export {
  REQUEST_DEADLINE_HEADER,
  REQUEST_DEADLINE_MAX_MS,
  requestDeadlineHeader,
} from '@dlock/lock-api';

const DEADLINE_DIGITS = /^[1-9][0-9]{0,6}$/;

/** Strict parse of the header's value; undefined when absent. */
export function parseRequestDeadlineMs(raw: string | string[] | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Array.isArray(raw) ? (raw.length === 1 ? raw[0] : '') : raw;
  const ms = DEADLINE_DIGITS.test(value) ? Number(value) : NaN;
  if (!(ms <= REQUEST_DEADLINE_MAX_MS)) {
    throw new ValidationError([
      {
        field: REQUEST_DEADLINE_HEADER,
        message: `must be a positive integer of milliseconds, at most ${REQUEST_DEADLINE_MAX_MS}`,
      },
    ]);
  }
  return ms;
}

/** The caller's budget, counted on the monotonic clock from when the request arrived. */
export class RequestDeadline {
  constructor(
    readonly budgetMs: number,
    private readonly receivedAtMs: number = performance.now(),
  ) {}

  remainingMs(nowMs: number = performance.now()): number {
    return Math.max(0, this.receivedAtMs + this.budgetMs - nowMs);
  }
}

/** The earlier of the caller's deadline and a server's own budget counted from now. */
export function deadlineWithin(
  caller: RequestDeadline | undefined,
  ownBudgetMs: number,
): RequestDeadline {
  if (caller !== undefined && caller.remainingMs() < ownBudgetMs) return caller;
  return new RequestDeadline(ownBudgetMs);
}

/**
 * How long a server may spend on one step: its own limit, or less when the
 * caller has less left (minus a margin for the answer's way back).
 */
export function boundedWaitMs(
  limitMs: number,
  deadline: RequestDeadline | undefined,
  marginMs: number,
  nowMs?: number,
): number {
  if (deadline === undefined) return limitMs;
  return Math.min(limitMs, Math.max(0, Math.floor(deadline.remainingMs(nowMs) - marginMs)));
}

interface DeadlinedRequest extends IncomingMessage {
  requestDeadline?: RequestDeadline | null;
}

/**
 * The request's deadline, parsed once; the body/trace middleware calls this on
 * arrival so the clock starts there and a malformed header is refused before
 * any handler runs.
 */
export function requestDeadline(req: IncomingMessage): RequestDeadline | undefined {
  const r = req as DeadlinedRequest;
  if (r.requestDeadline === undefined) {
    const ms = parseRequestDeadlineMs(req.headers[REQUEST_DEADLINE_HEADER.toLowerCase()]);
    r.requestDeadline = ms === undefined ? null : new RequestDeadline(ms);
  }
  return r.requestDeadline ?? undefined;
}

/** Handler parameter: the caller's deadline, or undefined when it sent none. */
export const RequestDeadlineParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  requestDeadline(ctx.switchToHttp().getRequest<IncomingMessage>()),
);

/**
 * A global guard: refuses, before any side effect, a request whose caller has
 * less than `minMs` left, since the answer could not arrive in time.
 */
export class DeadlineGuard implements CanActivate {
  constructor(private readonly minMs: number) {}

  canActivate(ctx: ExecutionContext): boolean {
    refuseShortBudget(
      requestDeadline(ctx.switchToHttp().getRequest<IncomingMessage>()),
      this.minMs,
    );
    return true;
  }
}

/** Throws 503 (retry-safe: nothing was done) when the caller's remaining budget is below `minMs`. */
export function refuseShortBudget(
  deadline: RequestDeadline | undefined,
  minMs: number,
  code: ErrorCode = 'UNAVAILABLE',
): void {
  if (deadline === undefined) return;
  const remainingMs = Math.floor(deadline.remainingMs());
  if (remainingMs >= minMs) return;
  throw new DlockError(
    code,
    'the caller deadline leaves too little time to finish; nothing was done',
    {
      details: { reason: 'deadline-too-short', remainingMs, requiredMs: minMs },
    },
  );
}
