import assert from 'node:assert/strict';
import type { EntityManager } from 'typeorm';

/** What a repository needs: something that runs one SQL statement (a manager, in or out of a transaction). */
export type Db = Pick<EntityManager, 'query'>;

/** pg returns int8 as text: parse at the repository edge. */
export function toBigint(value: unknown): bigint {
  assert.ok(typeof value === 'string' || typeof value === 'number', 'int8 column expected');
  return BigInt(value);
}

export function toBigintOrNull(value: unknown): bigint | null {
  return value === null || value === undefined ? null : toBigint(value);
}

/** Money stays a JSON integer: refuse (crash) rather than lose digits. */
export function toMinor(value: unknown): number {
  const n = Number(toBigint(value));
  assert.ok(Number.isSafeInteger(n), `amount ${String(value)} exceeds the safe integer range`);
  return n;
}

/** UPDATE ... RETURNING through TypeORM's postgres driver comes back as [rows, rowCount]. */
export function updatedRows<T>(result: unknown): T[] {
  assert.ok(Array.isArray(result) && result.length === 2 && Array.isArray(result[0]));
  return result[0] as T[];
}
