import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { DatabaseNotConnectedError, connectionConfig, poolOf } from './pool';

// In a file of their own so the fencing helpers (fenced-update.ts, prepared.ts) load without Nest:
// the published @dlock/persistence package is only those (docs/extending.md).
export {
  DatabaseNotConnectedError,
  postgresDataSource,
  poolOf,
  type DatabaseOptions,
} from './pool';

export interface BackgroundInitOptions {
  /** For the log line: paydb, proxydb, lockdb. */
  database: string;
  retryDelayMs?: number;
  retryDelayMaxMs?: number;
}

const stopped = new WeakSet<DataSource>();
const connecting = new WeakMap<DataSource, Promise<void>>();

/**
 * One connection attempt at a time per DataSource, shared by whoever asks
 * (the background retries, connected()): TypeORM refuses a second initialize.
 */
function connectOnce(ds: DataSource): Promise<void> {
  let pending = connecting.get(ds);
  if (pending === undefined) {
    pending = initializeOrEnd(ds).finally(() => connecting.delete(ds));
    connecting.set(ds, pending);
  }
  return pending;
}

async function initializeOrEnd(ds: DataSource): Promise<void> {
  try {
    await ds.initialize();
  } catch (err) {
    // A half-made pool (connected, then a setup query failed) is ended, not leaked;
    // the driver says "not connected" when there is none.
    await ds.driver.disconnect().catch(() => undefined);
    throw err;
  }
  if (stopped.has(ds)) {
    // Closed while this attempt was under way: the pool it made goes too.
    await ds.destroy();
    throw new DatabaseNotConnectedError();
  }
}

/**
 * `ds`, connected now if it is not yet (one attempt, shared with any already
 * under way); DatabaseNotConnectedError once closed. A database made with
 * `connect: 'when-used'` (DatabaseModule) is connected by its first caller.
 */
export async function connected(ds: DataSource): Promise<DataSource> {
  if (ds.isInitialized) return ds;
  if (stopped.has(ds)) throw new DatabaseNotConnectedError();
  await connectOnce(ds);
  return ds;
}

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
      await connectOnce(ds);
      logger.log({ event: 'database_connected', database: opts.database }, 'connected');
    } catch (err) {
      if (stopped.has(ds)) return;
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
  // An attempt under way closes what it made itself (initializeOrEnd).
  await connecting.get(ds)?.catch(() => undefined);
  if (ds.isInitialized) await ds.destroy();
}

/**
 * Readiness: a fresh connection with the pool's own settings answers
 * `SELECT 1`. Pooled connections outlive a password change or a restart
 * refusing new sessions, so probing through the pool said ready while most
 * requests failed to get a connection.
 */
export async function probeNewConnection(ds: DataSource, timeoutMs = 2_000): Promise<void> {
  poolOf(ds); // not connected yet: DatabaseNotConnectedError, as a request would get
  const client = new Client({
    ...connectionConfig(ds),
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
