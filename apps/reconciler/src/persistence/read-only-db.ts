import type { DataSource } from 'typeorm';
import { postgresDataSource, probeNewConnection } from '@dlock/persistence';
import { withDbRetries } from './db-retry';

export type DbName = 'lockdb' | 'paydb' | 'proxydb';

export interface ReadOnlyDbOptions {
  name: DbName;
  url: string;
  poolMax: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  tries: number;
}

/**
 * A read-only view of another component's database (paydb, proxydb, lockdb). The
 * session itself is read-only (`default_transaction_read_only`), so even a
 * mistaken write here fails in PostgreSQL: the reconciler detects, it never
 * repairs (docs/contract.md, docs/references.md). TypeORM owns the pool; nothing is synchronised
 * or migrated. The DataSource is initialised lazily so the process starts (and
 * reports not-ready) while a database is down.
 */
export class ReadOnlyDb {
  readonly name: DbName;
  private dataSource: DataSource | undefined;
  private initializing: Promise<DataSource> | undefined;

  constructor(private readonly options: ReadOnlyDbOptions) {
    this.name = options.name;
  }

  /** One statement, under the retry budget. pg returns int8 as strings: callers parse. */
  query<R>(sql: string, params: unknown[] = [], signal?: AbortSignal): Promise<R[]> {
    return withDbRetries(
      this.options.tries,
      async (): Promise<R[]> => (await this.source()).query(sql, params),
      signal,
    );
  }

  /** One try, no retries, on a new connection: readiness answers about now (probeNewConnection). */
  async ping(): Promise<void> {
    await probeNewConnection(await this.source(), this.options.connectTimeoutMs);
  }

  async close(): Promise<void> {
    const ds = this.dataSource;
    this.dataSource = undefined;
    if (ds?.isInitialized) await ds.destroy();
  }

  private source(): Promise<DataSource> {
    if (this.dataSource?.isInitialized) return Promise.resolve(this.dataSource);
    this.initializing ??= this.initialize().finally(() => (this.initializing = undefined));
    return this.initializing;
  }

  private async initialize(): Promise<DataSource> {
    const o = this.options;
    const ds = postgresDataSource({
      database: o.name,
      url: o.url,
      applicationName: 'reconciler',
      poolMax: o.poolMax,
      connectTimeoutMs: o.connectTimeoutMs,
      statementTimeoutMs: o.statementTimeoutMs,
      readOnly: true,
      // Failures surface as structured check_failed / resolution_failed events instead.
      logging: false,
    });
    try {
      await ds.initialize();
    } catch (err) {
      // A half-made pool has no live connections; end it so nothing leaks across tries.
      await ds.driver.disconnect().catch(() => undefined);
      throw err;
    }
    this.dataSource = ds;
    return ds;
  }
}
