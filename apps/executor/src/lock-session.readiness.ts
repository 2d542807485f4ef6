import { Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { LockSessionHealthIndicator } from '@dlock/lock-nest';
import { ReadinessCheck } from '@dlock/observability';

/** Ready = this worker holds an open lock-server session (without one no payout can proceed). */
@Injectable()
export class LockSessionReadiness extends ReadinessCheck {
  constructor(private readonly lockSession: LockSessionHealthIndicator) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    return this.lockSession.isHealthy('lockSession');
  }
}
