import assert from 'node:assert/strict';
import type { SqlTarget } from '@dlock/persistence';

/** What a repository runs its statements on (sqlRows): the DataSource, or a transaction's manager. */
export type Db = SqlTarget;

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
