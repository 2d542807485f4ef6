import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';
import { ReadOnlyDb, type DbName } from './read-only-db';
import { LOCKDB, PAYDB, PROXYDB } from './tokens';

function readOnlyDb(config: ReconcilerConfig, name: DbName, url: string): ReadOnlyDb {
  return new ReadOnlyDb({
    name,
    url,
    poolMax: config.RECONCILER_DB_POOL_MAX,
    connectTimeoutMs: config.RECONCILER_DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.RECONCILER_DB_STATEMENT_TIMEOUT_MS,
    tries: config.RECONCILER_DB_TRIES,
  });
}

/** The three read-only pools (lockdb optional), closed at shutdown. */
@Module({
  providers: [
    {
      provide: PAYDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => readOnlyDb(config, 'paydb', config.PAYDB_URL),
    },
    {
      provide: PROXYDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) => readOnlyDb(config, 'proxydb', config.PROXYDB_URL),
    },
    {
      provide: LOCKDB,
      inject: [RECONCILER_CONFIG],
      useFactory: (config: ReconcilerConfig) =>
        config.LOCKDB_URL ? readOnlyDb(config, 'lockdb', config.LOCKDB_URL) : null,
    },
  ],
  exports: [PAYDB, PROXYDB, LOCKDB],
})
export class DatabasesModule implements OnApplicationShutdown {
  constructor(
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    @Inject(LOCKDB) private readonly lockdb: ReadOnlyDb | null,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([this.paydb.close(), this.proxydb.close(), this.lockdb?.close()]);
  }
}
