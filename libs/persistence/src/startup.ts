import { Logger } from '@nestjs/common';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { masterPool } from './pool';

// In a file of their own so the fencing helpers (fenced-update.ts, prepared.ts) load without Nest:
// the published @dlock/persistence package is only those (docs/extending.md).
export { DatabaseNotConnectedError, masterPool } from './pool';

export interface BackgroundInitOptions {
  /** For the log line: paydb, proxydb, lockdb. */
  database: string;
  retryDelayMs?: number;
  retryDelayMaxMs?: number;
}

const stopped = new WeakSet<DataSource>();

/**
 * Connects `ds`, or keeps trying in the background: a service whose database
 * is down at boot listens, answers /health/ready unready and 503 on its
 * routes, and becomes ready when a connection succeeds (retried with backoff,
 * capped) instead of exiting (docs/operations.md, "Containers, start-up and
 * database outages"). The first attempt is awaited, so with the database up
 * the service is connected before it listens, as it always was.
 */
export async function initializeInBackground(
  ds: DataSource,
  opts: BackgroundInitOptions,
): Promise<DataSource> {
  const logger = new Logger(opts.database);
  const maxMs = opts.retryDelayMaxMs ?? 5_000;
  let delayMs = opts.retryDelayMs ?? 500;
  const attempt = async (): Promise<void> => {
    if (stopped.has(ds) || ds.isInitialized) return;
    try {
      await ds.initialize();
      if (stopped.has(ds)) await ds.destroy();
      else logger.log({ event: 'database_connected', database: opts.database }, 'connected');
    } catch (err) {
      // A half-made pool (connected, then a setup query failed) is ended, not leaked.
      const driver = ds.driver as PostgresDriver;
      const half = driver.master as Pool | undefined;
      driver.master = undefined;
      await half?.end().catch(() => undefined);
      logger.warn(
        { event: 'database_unreachable', database: opts.database, retryInMs: delayMs, err },
        `cannot connect yet; retrying in ${delayMs} ms`,
      );
      setTimeout(() => void attempt(), delayMs).unref();
      delayMs = Math.min(delayMs * 2, maxMs);
    }
  };
  await attempt();
  return ds;
}

/** Stops the retries of initializeInBackground and closes the pool if it was made. */
export async function closeDataSource(ds: DataSource): Promise<void> {
  stopped.add(ds);
  if (ds.isInitialized) await ds.destroy();
}

/**
 * Readiness: a fresh connection with the pool's own settings answers
 * `SELECT 1`. Pooled connections outlive a password change or a restart
 * refusing new sessions, so probing through the pool said ready while most
 * requests failed to get a connection.
 */
export async function probeNewConnection(ds: DataSource, timeoutMs = 2_000): Promise<void> {
  const pool = masterPool(ds) as Pool & { options: Record<string, unknown>; Client: PgClientClass };
  const client = new pool.Client({
    ...pool.options,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

type PgClientClass = new (options: Record<string, unknown>) => {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): void;
};
