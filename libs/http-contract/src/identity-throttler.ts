import { Injectable, Module, type DynamicModule, type ExecutionContext } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Request } from 'express';
import { ThrottlerGuard, ThrottlerModule, type ThrottlerLimitDetail } from '@nestjs/throttler';
import { ContentionError } from '@dlock/lock-api';
import { OPEN_PATHS, type AuthenticatedRequest } from './authentication';

/** The storage key of one identity's request budget: one per identity across every route. */
export function budgetKey(throttlerName: string, subject: string): string {
  return `${throttlerName}:${subject}`;
}

/** 429 CONTENTION_EXCEEDED for an identity whose budget is spent, `blockedForS` seconds left. */
export function rateLimited(limit: number, windowMs: number, blockedForS: number): ContentionError {
  return new ContentionError('request rate limit of this identity exceeded', {
    retryAfterMillis: Math.max(1, blockedForS) * 1000,
    details: { reason: 'rate-limit', limit, windowMs },
  });
}

/**
 * Requests per caller identity, not per address (many workers share a node's
 * address; one identity is one worker, docs/security.md). Past the limit:
 * 429 CONTENTION_EXCEEDED with retryAfterMillis, before any statement runs.
 *
 * Never limited (docs/security.md, "Limits"): routes marked @SkipThrottle (at
 * the lock-server, giving a lock back and keeping a session alive), and
 * whatever carries no identity — probes, scrapes and the OpenAPI document
 * (OPEN_PATHS). Those would otherwise share one anonymous bucket, so anyone
 * who can reach /metrics could make the readiness probe fail. The budget's
 * storage is global, so a service can charge work it does for a caller beyond
 * the request itself (the lock-server's waits, docs/lock-server.md "Limits").
 */
@Injectable()
export class IdentityThrottlerGuard extends ThrottlerGuard {
  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest & Request>();
    return Promise.resolve(OPEN_PATHS.has(req.path) || req.identity === undefined);
  }

  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    // shouldSkip let through only requests with an identity.
    return Promise.resolve((req as unknown as AuthenticatedRequest).identity!.subject);
  }

  protected override generateKey(
    _context: ExecutionContext,
    tracker: string,
    name: string,
  ): string {
    return budgetKey(name, tracker);
  }

  protected override throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw rateLimited(detail.limit, detail.ttl, detail.timeToBlockExpire);
  }
}

/**
 * The per-identity budget of a service: `limit` requests per `windowMs` for
 * each caller identity, across every route (the lock-server, payment-resource
 * and the rail-proxy; docs/security.md, "Limits").
 */
@Module({})
export class IdentityThrottlingModule {
  static forRoot(limit: number, windowMs: number): DynamicModule {
    const throttler = ThrottlerModule.forRoot({
      throttlers: [{ limit, ttl: windowMs }],
      setHeaders: false,
    });
    return {
      module: IdentityThrottlingModule,
      global: true,
      imports: [throttler],
      providers: [{ provide: APP_GUARD, useClass: IdentityThrottlerGuard }],
      exports: [throttler],
    };
  }
}
