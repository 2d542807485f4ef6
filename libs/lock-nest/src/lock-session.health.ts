import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { LockSessionKeeper } from './lock-session.keeper';

/**
 * Terminus indicator: up while the process holds an open lock-server session;
 * without one no protected work can run. It never waits on the lock-server
 * (a probe has a short timeout of its own): when down, it starts opening a
 * session in the background, so the next probe sees the lock-server's state.
 */
@Injectable()
export class LockSessionHealthIndicator {
  constructor(
    private readonly keeper: LockSessionKeeper,
    private readonly health: HealthIndicatorService,
  ) {}

  isHealthy<const Key extends string = 'lockSession'>(
    key: Key = 'lockSession' as Key,
  ): HealthIndicatorResult<Key> {
    const indicator = this.health.check(key);
    if (this.keeper.isOpen) return indicator.up();
    // Its outcome is the next probe's answer: a failure leaves it down, so nothing is lost here.
    void this.keeper.session().catch(() => undefined);
    return indicator.down({ message: 'no open lock-server session' });
  }
}
