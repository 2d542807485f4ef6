import { Inject, Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, type ThrottlerStorage } from '@nestjs/throttler';
import { ContentionError } from '@dlock/lock-api';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';

/** @nestjs/throttler's name for the one throttler the lock-server configures. */
const THROTTLER_NAME = 'default';

/** The storage key of one identity's request budget, shared by the guard and the waiters. */
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
 * An identity's request budget (LOCK_RATE_LIMIT per LOCK_RATE_WINDOW_MS), the
 * one the throttler guard charges per request. A server-side wait is charged
 * here once per re-try it makes for its caller, so a long wait costs more of
 * the budget than a short request (docs/lock-server.md, "Limits").
 */
@Injectable()
export class CallerBudget {
  constructor(
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    @Inject(LOCK_SERVER_CONFIG) private readonly config: LockServerConfig,
  ) {}

  /** Charges one request to `subject`; throws 429 rate-limit when its budget is spent. */
  async charge(subject: string): Promise<void> {
    const { LOCK_RATE_LIMIT: limit, LOCK_RATE_WINDOW_MS: windowMs } = this.config;
    const record = await this.storage.increment(
      budgetKey(THROTTLER_NAME, subject),
      windowMs,
      limit,
      windowMs,
      THROTTLER_NAME,
    );
    if (record.isBlocked) throw rateLimited(limit, windowMs, record.timeToBlockExpire);
  }
}
