import { Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { ReadinessCheck } from '@dlock/observability';
import { LockSessionHolder } from './lock/lock-session.holder';

/** Ready = this worker holds an open lock-server session (without one no payout can proceed). */
@Injectable()
export class LockSessionReadiness extends ReadinessCheck {
  constructor(private readonly sessions: LockSessionHolder) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    return this.sessions.isOpen
      ? { lockSession: { status: 'up' } }
      : { lockSession: { status: 'down', message: 'no open lock-server session' } };
  }
}
