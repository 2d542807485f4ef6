import type { EntityManager } from 'typeorm';

/**
 * Runs one SQL statement and returns its rows. TypeORM's postgres driver hands
 * back `[rows, rowCount]` for UPDATE and DELETE and plain rows otherwise; this
 * is the one place that knows.
 */
export async function sqlRows<T>(
  m: Pick<EntityManager, 'query'>,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const result: unknown = await m.query(sql, params);
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
