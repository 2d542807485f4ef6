import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DatabaseModule } from '@dlock/persistence';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';
import { ReadOnlyDb, readOnlySettings, type DbName } from './read-only-db.gateway';
import { LOCKDB, PAYDB, PROXYDB } from './databases.types';

/** DatabaseModule's DataSource of each database, seen only here. */
const SOURCES: Record<DbName, symbol> = {
  paydb: Symbol('paydb DataSource'),
  proxydb: Symbol('proxydb DataSource'),
  lockdb: Symbol('lockdb DataSource'),
};

function limits(config: ReconcilerConfig) {
  return {
    poolMax: config.RECONCILER_DB_POOL_MAX,
    connectTimeoutMs: config.RECONCILER_DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.RECONCILER_DB_STATEMENT_TIMEOUT_MS,
  };
}

/** One database, read-only and connected when first read; no URL (lockdb's is optional): null. */
function database(
  name: DbName,
  url: (config: ReconcilerConfig) => string | undefined,
): DynamicModule {
  return DatabaseModule.forRootAsync({
    token: SOURCES[name],
    inject: [RECONCILER_CONFIG],
    connect: 'when-used',
    useFactory: (config: ReconcilerConfig) => {
      const at = url(config);
      return at ? readOnlySettings(name, at, limits(config)) : null;
    },
  });
}

function view(token: symbol, name: DbName): Provider {
  return {
    provide: token,
    inject: [SOURCES[name], RECONCILER_CONFIG],
    useFactory: (ds: DataSource | null, config: ReconcilerConfig) =>
      ds &&
      new ReadOnlyDb(ds, {
        name,
        tries: config.RECONCILER_DB_TRIES,
        connectTimeoutMs: config.RECONCILER_DB_CONNECT_TIMEOUT_MS,
      }),
  };
}

/** The three read-only views (LOCKDB: null when LOCKDB_URL is unset); DatabaseModule closes them. */
@Module({
  imports: [
    database('paydb', (c) => c.PAYDB_URL),
    database('proxydb', (c) => c.PROXYDB_URL),
    database('lockdb', (c) => c.LOCKDB_URL),
  ],
  providers: [view(PAYDB, 'paydb'), view(PROXYDB, 'proxydb'), view(LOCKDB, 'lockdb')],
  exports: [PAYDB, PROXYDB, LOCKDB],
})
export class DatabasesModule {}
