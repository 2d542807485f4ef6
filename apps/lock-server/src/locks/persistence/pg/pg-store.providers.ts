import assert from 'node:assert';
import type { DynamicModule, Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SafetyEvents } from '@dlock/observability';
import { DatabaseModule } from '@dlock/persistence';
import type { LockServerConfig } from '../../../config';
import { LockStore, SessionRegistry } from '../lock-store.port';
import { RevocationLog } from '../revocation-log.port';
import { PgDatabase } from './pg.gateway';
import { PgLockStore } from './pg-lock.store';
import { PgRevocationLog } from './pg-revocation.log';
import { PgRevocationRequests } from './pg-revocation-requests.store';
import { RevocationRequests } from '../revocation-requests.port';
import { PgSessionRegistry } from './pg-session.registry';
import { ReleaseSignal } from './release-signal.model';
import { TokenHighWater } from './token-high-water.repository';
import { PgWakeups } from './pg-wakeups.loop';

/**
 * Stops the probe and reaper timers before any module closes (the pool goes
 * last, with DatabaseModule), then the listening connection.
 */
class PgLifecycle {
  constructor(
    private readonly db: PgDatabase,
    private readonly wakeups: PgWakeups,
  ) {}
  beforeApplicationShutdown(): void {
    this.db.stop();
  }
  async onApplicationShutdown(): Promise<void> {
    await this.wakeups.stop();
  }
}

function lockdbUrl(config: LockServerConfig): string {
  assert(config.LOCKDB_URL, 'LOCKDB_URL is required for LOCK_BACKEND=pg (config.ts)');
  return config.LOCKDB_URL;
}

/**
 * lockdb, made and closed like every app's database (DatabaseModule): with
 * lockdb down at boot the server listens unready (NOT_LEADER) and keeps connecting.
 */
export function lockdbModule(config: LockServerConfig): DynamicModule {
  return DatabaseModule.forRootAsync({
    useFactory: () => ({
      database: 'lockdb',
      url: lockdbUrl(config),
      applicationName: 'dlock-lock-server',
      poolMax: config.LOCKDB_POOL_MAX,
      connectTimeoutMs: config.LOCKDB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: config.LOCKDB_STATEMENT_TIMEOUT_MS,
      // Client-side cap in case the server never answers (a partitioned socket).
      queryTimeoutMs: config.LOCKDB_STATEMENT_TIMEOUT_MS + 500,
      idleTimeoutMs: 30_000,
    }),
  });
}

/** The pg backend's providers for LockStore and SessionRegistry (LOCK_BACKEND=pg), over lockdbModule's DataSource. */
export function pgStoreProviders(config: LockServerConfig): Provider[] {
  return [
    {
      provide: PgDatabase,
      inject: [DataSource, SafetyEvents],
      useFactory: (ds: DataSource, safety: SafetyEvents): PgDatabase => {
        const db = new PgDatabase(ds, config, new TokenHighWater(safety));
        db.start();
        return db;
      },
    },
    { provide: ReleaseSignal, useFactory: () => new ReleaseSignal() },
    {
      provide: PgWakeups,
      useFactory: (signal: ReleaseSignal) => {
        const wakeups = new PgWakeups(lockdbUrl(config), signal);
        wakeups.start();
        return wakeups;
      },
      inject: [ReleaseSignal],
    },
    {
      provide: PgLifecycle,
      useFactory: (db: PgDatabase, wakeups: PgWakeups) => new PgLifecycle(db, wakeups),
      inject: [PgDatabase, PgWakeups],
    },
    {
      provide: LockStore,
      useFactory: (db: PgDatabase, signal: ReleaseSignal) => new PgLockStore(db, signal),
      inject: [PgDatabase, ReleaseSignal],
    },
    {
      provide: SessionRegistry,
      useFactory: (db: PgDatabase, signal: ReleaseSignal) => new PgSessionRegistry(db, signal),
      inject: [PgDatabase, ReleaseSignal],
    },
    {
      provide: RevocationLog,
      useFactory: (db: PgDatabase) => new PgRevocationLog(db),
      inject: [PgDatabase],
    },
    {
      provide: RevocationRequests,
      useFactory: (db: PgDatabase) => new PgRevocationRequests(db),
      inject: [PgDatabase],
    },
  ];
}
