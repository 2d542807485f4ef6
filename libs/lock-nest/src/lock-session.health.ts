import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { LockSessionKeeper } from './lock-session.keeper';

/**
 * Terminus indicator: up while the process holds an open lock-server session.
 * Asking opens one if there is none, so readiness also tells whether a lock
 * could be taken right now; without a session no protected work can run.
 */
@Injectable()
export class LockSessionHealthIndicator {
  constructor(
    private readonly keeper: LockSessionKeeper,
    private readonly health: HealthIndicatorService,
  ) {}

  async isHealthy<const Key extends string = 'lockSession'>(
    key: Key = 'lockSession' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.health.check(key);
    try {
      await this.keeper.session();
      return indicator.up();
    } catch {
      return indicator.down({ message: 'no open lock-server session' });
    }
  }
}
