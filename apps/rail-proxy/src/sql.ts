import { DataSource, type EntityManager } from 'typeorm';
import { preparedManager } from '@dlock/persistence';

/**
 * Runs one SQL statement, prepared (see @dlock/persistence), on a transaction's
 * manager or on the pool, and returns its rows. TypeORM's shapes give back
 * `[rows, rowCount]` for UPDATE and DELETE and plain rows otherwise; this is
 * the one place that knows.
 */
export async function sqlRows<T>(
  m: EntityManager | DataSource,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const result: unknown = await preparedManager(m instanceof DataSource ? m.manager : m).query(
    sql,
    params,
  );
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as T[];
  }
  return result as T[];
}
