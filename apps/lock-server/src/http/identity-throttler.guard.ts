import { Injectable, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import { OPEN_PATHS, type AuthenticatedRequest } from '@dlock/http-contract';
import { budgetKey, rateLimited } from '../locks/service/caller-budget';

/**
 * Requests per caller identity, not per address (many workers share a node's
 * address; one identity is one worker, docs/security.md). Past the limit:
 * 429 CONTENTION_EXCEEDED with retryAfterMillis, before any statement runs.
 *
 * Never limited (docs/security.md, "Limits"): giving a lock back and keeping
 * a session alive (release L6, close L3, heartbeat L2: @SkipThrottle on those
 * routes), and whatever carries no identity — probes, scrapes and the OpenAPI
 * document (OPEN_PATHS). Those would otherwise share one anonymous bucket, so
 * anyone who can reach /metrics could make the readiness probe fail.
 * A server-side wait draws on the same budget as it re-tries (CallerBudget).
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

  /** One budget per identity across every route (the default key is per route). */
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
