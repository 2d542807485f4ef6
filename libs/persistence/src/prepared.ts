import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResult } from 'pg';
import { DataSource, QueryFailedError, type EntityManager } from 'typeorm';
import { hasRecordedPool, poolOf } from './pool';

/**
 * One statement as a named prepared statement: PostgreSQL parses and plans it
 * once per connection and afterwards only binds and runs it. On the payout
 * path that is a third of the database's CPU (bench/reports/e2e.md). The name
 * comes from the text, so a text has one name on every connection and two
 * texts never share one. Statements name their columns (no `*`): an added
 * column must not change the result type of a statement already prepared.
 */
export function preparedStatement(sql: string, params: readonly unknown[] = []): QueryConfig {
  return { name: statementName(sql), text: sql, values: [...params] };
}

/** Texts are few and fixed (a repository's statements); the cap only bounds a mistake. */
const NAMES_MAX = 2_000;
const names = new Map<string, string>();

function statementName(sql: string): string {
  let name = names.get(sql);
  if (name === undefined) {
    name = `dlock_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`;
    if (names.size < NAMES_MAX) names.set(sql, name);
  }
  return name;
}

export interface SqlRowsOptions {
  /**
   * Default true (preparedStatement). False: planned afresh with each call's
   * values, for statements run seldom whose best plan depends on them (the
   * reconciler's range reads).
   */
  prepared?: boolean;
}

/** What a statement runs on: a DataSource (its pool), or a manager (its transaction, when it has one). */
export type SqlTarget = DataSource | EntityManager;

/**
 * dlock's one query wrapper: one statement on a DataSource's pool (poolOf, no
 * TypeORM runner: the hot paths' way) or on a manager's own connection (its
 * transaction, when it has one), answering its rows whatever the statement's
 * kind (an UPDATE's RETURNING rows too); a failure is a QueryFailedError, as
 * from TypeORM. TypeORM still owns the connections and the transactions.
 * An app's own rules about failures (the lock-server's NOT_LEADER, the
 * reconciler's retries) sit around it, never inside.
 */
export async function sqlRows<T>(
  db: SqlTarget,
  sql: string,
  params: readonly unknown[] = [],
  options?: SqlRowsOptions,
): Promise<T[]> {
  const query =
    options?.prepared === false
      ? { text: sql, values: [...params] }
      : preparedStatement(sql, params);
  if (!(db instanceof DataSource)) return (await runOn(db, query)).rows as T[];
  if (!hasRecordedPool(db)) return (await runOn(db.manager, query)).rows as T[];
  const pool = poolOf(db); // not connected: DatabaseNotConnectedError, as it is
  try {
    return (await pool.query(query)).rows as T[];
  } catch (err) {
    throw queryFailed(err, query);
  }
}

async function runOn(manager: EntityManager, query: QueryConfig): Promise<QueryResult> {
  if (manager.queryRunner) {
    return run((await manager.queryRunner.connect()) as PoolClient, query);
  }
  if (hasRecordedPool(manager.connection)) return run(poolOf(manager.connection), query);
  // A DataSource made outside dlock (an app's own TypeOrmModule): a runner of its own.
  const runner = manager.connection.createQueryRunner();
  try {
    return await run((await runner.connect()) as PoolClient, query);
  } finally {
    await runner.release();
  }
}

async function run(client: Pool | PoolClient, query: QueryConfig): Promise<QueryResult> {
  try {
    return await client.query(query);
  } catch (err) {
    throw queryFailed(err, query);
  }
}

/** The error TypeORM's own runner throws, for the apps' filters and logs. */
function queryFailed(err: unknown, query: QueryConfig): unknown {
  return err instanceof Error ? new QueryFailedError(query.text, query.values ?? [], err) : err;
}
