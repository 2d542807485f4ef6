import { DataSource, type EntityManager } from 'typeorm';
import { runPrepared } from '@dlock/persistence';

/**
 * Runs one SQL statement, prepared (see @dlock/persistence), on a transaction's
 * manager or on the pool, and returns its rows, whatever the statement's kind.
 */
export async function sqlRows<T>(
  m: EntityManager | DataSource,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  return (await runPrepared(m instanceof DataSource ? m.manager : m, sql, params)).rows as T[];
}
