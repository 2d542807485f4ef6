import { Inject, Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, type ThrottlerStorage } from '@nestjs/throttler';
import { budgetKey, rateLimited } from '@dlock/http-contract';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';

/** @nestjs/throttler's name for the one throttler the lock-server configures. */
const THROTTLER_NAME = 'default';

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
