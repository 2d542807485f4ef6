import pg, { type Pool, type PoolConfig } from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';

/**
 * The pool is not there yet: the database was unreachable at boot and the
 * first connection is still being retried. SQLSTATE 08001 (the client could
 * not establish a connection), so every classifier reads it as "nothing was
 * sent": 503 UNAVAILABLE, NOT_LEADER on the lock-server.
 */
export class DatabaseNotConnectedError extends Error {
  readonly code = '08001';
  constructor() {
    super('no connection to the database yet');
    this.name = 'DatabaseNotConnectedError';
  }
}

/** Everything dlock sets on a connection to one of its databases (docs/operations.md). */
export interface DatabaseOptions {
  /** lockdb, paydb, proxydb: names the database in log lines. */
  database: string;
  url: string;
  /** `application_name` of every session: who holds a lock in pg_stat_activity. */
  applicationName: string;
  poolMax: number;
  connectTimeoutMs: number;
  /** Server side: PostgreSQL cancels a statement running longer. */
  statementTimeoutMs: number;
  /** Client side: a statement whose answer never comes (a partitioned socket) fails after this. */
  queryTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Every session read-only (`default_transaction_read_only`): a mistaken write fails in PostgreSQL. */
  readOnly?: boolean;
  /** TypeORM's logging; off unless given (failures surface as the services' own events). */
  logging?: false | 'error'[];
  /** Only the CLIs that migrate pass these; services never migrate (docs/operations.md). */
  migrations?: DataSourceOptions['migrations'];
}

/** The pool behind each DataSource made here, captured where pg creates it. */
const pools = new WeakMap<DataSource, Pool>();

/**
 * The ONE way dlock makes a DataSource: TypeORM owns the pool, transactions and
 * migrations, the schema is never synchronised. The pool class handed to
 * TypeORM (its public `driver` option) records the pool it makes, so the hot
 * paths reach it without TypeORM's internals (poolOf).
 */
export function postgresDataSource(options: DatabaseOptions): DataSource {
  const extra: PoolConfig & Record<string, unknown> = {
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    application_name: options.applicationName,
  };
  if (options.queryTimeoutMs !== undefined) extra.query_timeout = options.queryTimeoutMs;
  if (options.idleTimeoutMs !== undefined) extra.idleTimeoutMillis = options.idleTimeoutMs;
  if (options.readOnly) extra.options = '-c default_transaction_read_only=on';
  const holder: { ds?: DataSource } = {};
  class RecordedPool extends pg.Pool {
    constructor(config?: PoolConfig) {
      super(config);
      if (holder.ds) pools.set(holder.ds, this);
    }
  }
  holder.ds = new DataSource({
    type: 'postgres',
    url: options.url,
    driver: Object.create(pg, { Pool: { value: RecordedPool } }) as typeof pg,
    synchronize: false,
    migrationsRun: false,
    migrations: options.migrations ?? [],
    entities: [],
    installExtensions: false,
    logging: options.logging ?? false,
    extra,
  });
  return holder.ds;
}

/**
 * The pg pool of a DataSource made by postgresDataSource, or
 * DatabaseNotConnectedError while it is not connected (or was made elsewhere).
 */
export function poolOf(ds: DataSource): Pool {
  const pool = pools.get(ds);
  if (pool === undefined || !ds.isInitialized) throw new DatabaseNotConnectedError();
  return pool;
}

/** Whether poolOf can answer for `ds` (a DataSource of an app outside dlock may not be ours). */
export function hasRecordedPool(ds: DataSource): boolean {
  return pools.has(ds);
}

/** The pg connection settings of a DataSource made by postgresDataSource, for a connection of its own. */
export function connectionConfig(ds: DataSource): PoolConfig {
  const options = ds.options as { url?: string; extra?: PoolConfig };
  return { connectionString: options.url, ...options.extra };
}
