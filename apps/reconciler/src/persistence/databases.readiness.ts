import { Inject, Injectable } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { ReadinessCheck } from '@dlock/observability';
import { PAYDB, PROXYDB } from './databases.types';
import type { ReadOnlyDb } from './read-only-db.gateway';

/** Ready = both databases the detective checks read answer. */
@Injectable()
export class ReconcilerReadiness extends ReadinessCheck {
  constructor(
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
  ) {
    super();
  }

  async check(): Promise<HealthIndicatorResult> {
    const result: HealthIndicatorResult = {};
    await Promise.all(
      [this.paydb, this.proxydb].map(async (db) => {
        try {
          await db.ping();
          result[db.name] = { status: 'up' };
        } catch (err) {
          result[db.name] = { status: 'down', message: (err as Error).message };
        }
      }),
    );
    return result;
  }
}
