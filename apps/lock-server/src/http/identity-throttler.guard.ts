import { Injectable, type ExecutionContext } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import { ContentionError } from '@dlock/lock-api';
import type { AuthenticatedRequest } from '@dlock/http-contract';

/**
 * Requests per caller identity, not per address (many workers share a node's
 * address; one identity is one worker, docs/security.md). Past the limit:
 * 429 CONTENTION_EXCEEDED with retryAfterMillis, before any statement runs.
 * Release (L6) and session close (L3) are exempt: giving a lock back is
 * never refused (@SkipThrottle on those routes).
 */
@Injectable()
export class IdentityThrottlerGuard extends ThrottlerGuard {
  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    // The authentication gate ran first: every request here has an identity.
    return Promise.resolve((req as unknown as AuthenticatedRequest).identity?.subject ?? '');
  }

  /** One budget per identity across every route (the default key is per route). */
  protected override generateKey(
    _context: ExecutionContext,
    tracker: string,
    name: string,
  ): string {
    return `${name}:${tracker}`;
  }

  protected override throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new ContentionError('request rate limit of this identity exceeded', {
      retryAfterMillis: Math.max(1, detail.timeToBlockExpire) * 1000,
      details: { reason: 'rate-limit', limit: detail.limit, windowMs: detail.ttl },
    });
  }
}
