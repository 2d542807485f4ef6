import { Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { ReadinessCheck } from '@dlock/observability';
import { probeNewConnection } from '@dlock/persistence';

/** Ready means paydb answers. */
@Injectable()
export class PaydbReadiness extends ReadinessCheck {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    try {
      await probeNewConnection(this.dataSource);
      return { paydb: { status: 'up' } };
    } catch (err) {
      return { paydb: { status: 'down', message: (err as Error).message } };
    }
  }
}
