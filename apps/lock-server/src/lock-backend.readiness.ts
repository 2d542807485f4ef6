import { Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { ReadinessCheck } from '@dlock/observability';
import { LockStore } from './locks/persistence/lock-store.port';

/** Ready when the backend can decide a grant (database writable / etcd has a leader). */
@Injectable()
export class LockBackendReadiness extends ReadinessCheck {
  constructor(private readonly store: LockStore) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    try {
      await this.store.ping();
      return { lockBackend: { status: 'up' } };
    } catch (err) {
      return { lockBackend: { status: 'down', reason: (err as Error).message } };
    }
  }
}
