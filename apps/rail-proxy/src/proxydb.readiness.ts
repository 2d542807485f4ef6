import { Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { ReadinessCheck } from '@dlock/observability';
import { probeNewConnection } from '@dlock/persistence';

/** Ready = proxydb answers (the high-water mark and the record live there). */
@Injectable()
export class ProxydbReadiness extends ReadinessCheck {
  constructor(private readonly db: DataSource) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    try {
      await probeNewConnection(this.db);
      return { proxydb: { status: 'up' } };
    } catch (err) {
      return { proxydb: { status: 'down', message: (err as Error).message } };
    }
  }
}
