import assert from 'node:assert';
import type { Provider } from '@nestjs/common';
import { SafetyEvents } from '@dlock/observability';
import { initializeInBackground, postgresDataSource } from '@dlock/persistence';
import type { LockServerConfig } from '../../../config';
import { LockStore, SessionRegistry } from '../lock-store.port';
import { RevocationLog } from '../revocation-log.port';
import { PgDatabase } from './pg-database';
import { PgLockStore } from './pg-lock.store';
import { PgRevocationLog } from './pg-revocation.log';
import { PgRevocationRequests } from './pg-revocation-requests';
import { RevocationRequests } from '../revocation-requests.port';
import { PgSessionRegistry } from './pg-session.registry';
import { ReleaseSignal } from './release-signal';
import { TokenHighWater } from './token-high-water';
import { PgWakeups } from './pg-wakeups';

/** Closes the pool and the listening connection when the app shuts down (Nest calls this hook). */
class PgLifecycle {
  constructor(
    private readonly db: PgDatabase,
    private readonly wakeups: PgWakeups,
  ) {}
  async onApplicationShutdown(): Promise<void> {
    await this.wakeups.stop();
    await this.db.close();
  }
}

/** The pg backend's providers for LockStore and SessionRegistry (LOCK_BACKEND=pg). */
export function pgStoreProviders(config: LockServerConfig): Provider[] {
  return [
    {
      provide: PgDatabase,
      inject: [SafetyEvents],
      useFactory: async (safety: SafetyEvents): Promise<PgDatabase> => {
        assert(config.LOCKDB_URL, 'LOCKDB_URL is required for LOCK_BACKEND=pg (config.ts)');
        const ds = postgresDataSource({
          database: 'lockdb',
          url: config.LOCKDB_URL,
          applicationName: 'dlock-lock-server',
          poolMax: config.LOCKDB_POOL_MAX,
          connectTimeoutMs: config.LOCKDB_CONNECT_TIMEOUT_MS,
          statementTimeoutMs: config.LOCKDB_STATEMENT_TIMEOUT_MS,
          // Client-side cap in case the server never answers (a partitioned socket).
          queryTimeoutMs: config.LOCKDB_STATEMENT_TIMEOUT_MS + 500,
          idleTimeoutMs: 30_000,
        });
        // With lockdb down at boot the server listens unready (NOT_LEADER) and keeps connecting.
        await initializeInBackground(ds, { database: 'lockdb' });
        const db = new PgDatabase(ds, config, new TokenHighWater(safety));
        db.start();
        return db;
      },
    },
    { provide: ReleaseSignal, useFactory: () => new ReleaseSignal() },
    {
      provide: PgWakeups,
      useFactory: (signal: ReleaseSignal) => {
        assert(config.LOCKDB_URL, 'LOCKDB_URL is required for LOCK_BACKEND=pg (config.ts)');
        const wakeups = new PgWakeups(config.LOCKDB_URL, signal);
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
