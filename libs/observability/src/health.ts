import { Controller, Get, Injectable, type DynamicModule, type Type } from '@nestjs/common';
import {
  HealthCheck,
  HealthCheckService,
  TerminusModule,
  type HealthIndicatorResult,
} from '@nestjs/terminus';

/** What an app's readiness means: its own database or etcd answers. */
export abstract class ReadinessCheck {
  abstract check(): Promise<HealthIndicatorResult>;
}

/** Readiness for an app with no backing store (the rail stub). */
@Injectable()
export class AlwaysReady extends ReadinessCheck {
  async check(): Promise<HealthIndicatorResult> {
    return { self: { status: 'up' } };
  }
}

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly readiness: ReadinessCheck,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([async () => ({ process: { status: 'up' } })]);
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([() => this.readiness.check()]);
  }
}

/** `/health/live` and `/health/ready` (Terminus) with the app's own readiness check. */
export class HealthModule {
  static register(
    readiness: Type<ReadinessCheck>,
    imports: DynamicModule['imports'] = [],
  ): DynamicModule {
    return {
      module: HealthModule,
      imports: [TerminusModule.forRoot({ logger: false }), ...imports],
      controllers: [HealthController],
      providers: [{ provide: ReadinessCheck, useClass: readiness }],
    };
  }
}
