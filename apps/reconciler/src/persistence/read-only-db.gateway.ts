import type { DataSource } from 'typeorm';
import { connected, probeNewConnection, sqlRows, type DatabaseOptions } from '@dlock/persistence';
import { withDbRetries } from './db-retry.rules';

export type DbName = 'lockdb' | 'paydb' | 'proxydb';

export interface ReadOnlyLimits {
  poolMax: number;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
}

/**
 * The settings of a read-only view of another component's database (paydb,
 * proxydb, lockdb). The session itself is read-only
 * (`default_transaction_read_only`), so even a mistaken write here fails in
 * PostgreSQL: the reconciler detects, it never repairs (docs/contract.md,
 * docs/references.md).
 */
export function readOnlySettings(
  name: DbName,
  url: string,
  limits: ReadOnlyLimits,
): DatabaseOptions {
  return {
    database: name,
    url,
    applicationName: 'reconciler',
    poolMax: limits.poolMax,
    connectTimeoutMs: limits.connectTimeoutMs,
    statementTimeoutMs: limits.statementTimeoutMs,
    readOnly: true,
    // Failures surface as structured check_failed / resolution_failed events instead.
    logging: false,
  };
}

export interface ReadOnlyDbOptions {
  name: DbName;
  /** Tries per statement (RECONCILER_DB_TRIES), the budget of db-retry.rules.ts. */
  tries: number;
  /** How long readiness waits for a new connection. */
  connectTimeoutMs: number;
}

/**
 * What the reconciler's stores read through: a database made by DatabaseModule
 * (readOnlySettings, connected when first used, so the process starts and
 * reports not-ready while a database is down; closed at shutdown) under the
 * reconciler's one retry layer (db-retry.rules.ts). A store never retries itself.
 */
export class ReadOnlyDb {
  readonly name: DbName;

  constructor(
    private readonly ds: DataSource,
    private readonly options: ReadOnlyDbOptions,
  ) {
    this.name = options.name;
  }

  /**
   * One statement, under the retry budget; each try connects first if the
   * pool is not there yet. Planned with each call's values (not prepared):
   * the reads are few and their best plan depends on the cursor. pg returns
   * int8 as strings: callers parse.
   */
  query<R>(sql: string, params: unknown[] = [], signal?: AbortSignal): Promise<R[]> {
    return withDbRetries(
      this.options.tries,
      async () => sqlRows<R>(await connected(this.ds), sql, params, { prepared: false }),
      signal,
    );
  }

  /** One try, no retries, on a new connection: readiness answers about now (probeNewConnection). */
  async ping(): Promise<void> {
    await probeNewConnection(await connected(this.ds), this.options.connectTimeoutMs);
  }
}
