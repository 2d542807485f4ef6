import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

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

/** The pg pool TypeORM owns, or DatabaseNotConnectedError while it does not exist. */
export function masterPool(ds: DataSource): Pool {
  const pool = (ds.driver as PostgresDriver).master as Pool | undefined;
  if (pool === undefined) throw new DatabaseNotConnectedError();
  return pool;
}
