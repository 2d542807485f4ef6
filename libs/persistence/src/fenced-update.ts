import assert from 'node:assert/strict';
import type { EntityManager } from 'typeorm';
import { sqlRows } from './prepared';

/** Table and column names the helper writes into SQL: plain lower-case identifiers only. */
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/** A fenced row write names a handful of columns; the cap only bounds a mistake. */
const COLUMNS_MAX = 32;

export interface FencedUpdateSpec {
  /** The table that keeps its own fence column (docs/extending.md). */
  table: string;
  /** The row's key. */
  id: string | number;
  /** The grant's fencing token (`handle.fencingToken`), passed explicitly. */
  token: bigint;
  /** Columns to write, besides the fence. Values are bound parameters, never spliced. */
  set: Readonly<Record<string, unknown>>;
  /** Extra equality conditions on the row (e.g. `{ status: 'PENDING' }`), checked in the same statement. */
  when?: Readonly<Record<string, unknown>>;
  /**
   * Let the token that last wrote the row write it again (`fence <= token`):
   * the later steps of one grant. The first write of a grant leaves it false,
   * so a token claims a row once and a replay of that claim is refused.
   */
  acceptSameToken?: boolean;
  /** Columns to answer from the written row. */
  returning?: readonly string[];
  idColumn?: string;
  fenceColumn?: string;
}

export interface FencedUpdateResult<Row> {
  /**
   * False when the row's fence is already at or above the token (a newer
   * holder wrote, or this token already did), or when there is no such row.
   * Nothing was written then.
   */
  passed: boolean;
  row: Row | undefined;
}

/**
 * The one-statement fence as text and parameters:
 * `UPDATE <table> SET <cols>, fence = $token WHERE id = $id AND fence < $token [AND <when>] RETURNING …`.
 * The check and the write are one statement, so no holder can slip between
 * them; a stale token changes nothing. For a table you query yourself.
 */
export function fencedUpdateStatement(spec: FencedUpdateSpec): { sql: string; params: unknown[] } {
  const idColumn = identifier(spec.idColumn ?? 'id');
  const fence = identifier(spec.fenceColumn ?? 'fence');
  const columns = Object.keys(spec.set);
  const conditions = Object.keys(spec.when ?? {});
  assert.ok(columns.length + conditions.length <= COLUMNS_MAX, `at most ${COLUMNS_MAX} columns`);
  assert.ok(spec.token > 0n, 'a fencing token is a positive bigint');
  assert.ok(!columns.includes(fence), 'the fence column is written by the helper');
  // $1 = id, $2 = token, then the `set` values, then the `when` values, in key order.
  const params: unknown[] = [spec.id, spec.token.toString()];
  const bind = (value: unknown) => `$${params.push(value)}`;
  const assignments = columns.map((c) => `${identifier(c)} = ${bind(spec.set[c])}`);
  assignments.push(`${fence} = $2::bigint`);
  const where = [`${idColumn} = $1`, `${fence} ${spec.acceptSameToken ? '<=' : '<'} $2::bigint`];
  for (const c of conditions) where.push(`${identifier(c)} = ${bind(spec.when?.[c])}`);
  const returning = (spec.returning ?? [idColumn]).map(identifier);
  const sql =
    `UPDATE ${identifier(spec.table)} SET ${assignments.join(', ')}` +
    ` WHERE ${where.join(' AND ')} RETURNING ${returning.join(', ')}`;
  return { sql, params };
}

/**
 * Runs the one-statement fence on the manager's connection (its transaction,
 * when it has one) as a prepared statement, and says whether it passed. On
 * `passed: false` the caller reports FENCED_OUT and stops (docs/extending.md).
 */
export async function fencedUpdate<Row extends Record<string, unknown>>(
  manager: EntityManager,
  spec: FencedUpdateSpec,
): Promise<FencedUpdateResult<Row>> {
  const { sql, params } = fencedUpdateStatement(spec);
  const rows = await sqlRows<Row>(manager, sql, params);
  assert.ok(rows.length <= 1, `fenced update of ${spec.table} matched several rows`);
  const row = rows[0] as Row | undefined;
  return { passed: row !== undefined, row };
}

function identifier(name: string): string {
  assert.ok(IDENTIFIER.test(name), `not a plain SQL identifier: ${JSON.stringify(name)}`);
  return name;
}

/** Where a revocation's floor lands: the row of `table` that `fencedUpdate` fences with the same columns. */
export interface FenceFloorSpec {
  table: string;
  /** The row's key: the lock key's part after the fence point's prefix (`refund:r-1` → `r-1`). */
  id: string | number;
  /** The revocation's floor: every later grant's token exceeds it, the revoked token is below it. */
  floor: bigint;
  idColumn?: string;
  fenceColumn?: string;
}

/** What a floor raise did: moved the fence, found it at or past the floor, or found no row. */
export type FenceFloorResult = 'raised' | 'unchanged' | 'not_found';

export interface FenceFloorRaise {
  result: FenceFloorResult;
  /** The fence before the raise; null when there is no such row. */
  before: bigint | null;
  /** The fence after it; null when there is no such row. */
  after: bigint | null;
}

/**
 * The one-statement floor raise as text and parameters: the row is locked,
 * then `fence = floor` only where `fence < floor`, so a fence never moves
 * down and the answer says what it was. After it, `fencedUpdate` with any
 * token at or below the floor (the revoked holder's) passes no more, with or
 * without `acceptSameToken`, while every later grant's token still does.
 */
export function fenceFloorStatement(spec: FenceFloorSpec): { sql: string; params: unknown[] } {
  const table = identifier(spec.table);
  const idColumn = identifier(spec.idColumn ?? 'id');
  const fence = identifier(spec.fenceColumn ?? 'fence');
  assert.ok(spec.floor > 0n, 'a token floor is a positive bigint');
  const sql =
    `WITH prior AS (SELECT ${idColumn} AS id, ${fence} AS fence FROM ${table}` +
    ` WHERE ${idColumn} = $1 FOR UPDATE),` +
    ` raised AS (UPDATE ${table} t SET ${fence} = $2::bigint FROM prior p` +
    ` WHERE t.${idColumn} = p.id AND t.${fence} < $2::bigint RETURNING t.${fence} AS fence)` +
    ` SELECT p.fence::text AS before, COALESCE(r.fence, p.fence)::text AS after,` +
    ` r.fence IS NOT NULL AS raised FROM prior p LEFT JOIN raised r ON true`;
  return { sql, params: [spec.id, spec.floor.toString()] };
}

/** Runs the floor raise on the manager's connection; see `fenceFloorStatement`. */
export async function raiseFenceFloor(
  manager: EntityManager,
  spec: FenceFloorSpec,
): Promise<FenceFloorRaise> {
  const { sql, params } = fenceFloorStatement(spec);
  const rows = await sqlRows<{ before: string; after: string; raised: boolean }>(
    manager,
    sql,
    params,
  );
  assert.ok(rows.length <= 1, `fence floor raise of ${spec.table} matched several rows`);
  if (rows.length === 0) return { result: 'not_found', before: null, after: null };
  const [row] = rows;
  return {
    result: row.raised ? 'raised' : 'unchanged',
    before: BigInt(row.before),
    after: BigInt(row.after),
  };
}

export interface TableFenceFloorsSpec {
  /** The lock keys this table is guarded by: `refund:` for `refund:{id}`. */
  prefix: string;
  table: string;
  idColumn?: string;
  fenceColumn?: string;
}

/**
 * A table of your own as a fence point's memory (docs/extending.md, "Fenced by
 * a revoke"): give it to `FencePointModule` of `@dlock/lock-nest`, and a
 * revoke of `{prefix}{id}` raises that row's fence before the revoke answers.
 */
export class TableFenceFloors {
  readonly prefix: string;

  constructor(
    private readonly manager: EntityManager,
    private readonly spec: TableFenceFloorsSpec,
  ) {
    assert.ok(spec.prefix.length > 0, 'a fence point serves a non-empty key prefix');
    this.prefix = spec.prefix;
  }

  /** Raises the fence of row `id` (the key without the prefix) to `floor`. */
  raise(id: string, floor: bigint): Promise<FenceFloorRaise> {
    const { table, idColumn, fenceColumn } = this.spec;
    return raiseFenceFloor(this.manager, { table, id, floor, idColumn, fenceColumn });
  }
}
