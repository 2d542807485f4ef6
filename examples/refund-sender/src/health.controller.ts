import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockSessionHealthIndicator } from '@dlock/lock-nest';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly lockSession: LockSessionHealthIndicator,
  ) {}

  /** Out of rotation while the process has no lock-server session: no refund could be sent. */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.lockSession.isHealthy('lockSession')]);
  }
}
