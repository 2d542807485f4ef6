import assert from 'node:assert/strict';
import { CHAIN_GENESIS, chainContentSql, linkHash, type ChainSpec } from './audit-chain';

/** One statement against the chain's database; int8 comes back as a string. */
export type ChainQuery = <R>(sql: string, params: unknown[], signal?: AbortSignal) => Promise<R[]>;

export type ChainBreakKind =
  /** The row's stored hash is not the hash of its content and the previous link: edited or forged. */
  | 'hash_mismatch'
  /** The next link is not the next number: a row was removed (or renumbered). */
  | 'sequence_gap'
  /** A row that belongs to the chain has no place in it: written with the seal switched off. */
  | 'unchained_row'
  /** The link at a remembered head differs from what was remembered: history rewritten. */
  | 'anchor_mismatch'
  /** The chain ends before a remembered head: its tail was removed. */
  | 'truncated';

export interface ChainBreak {
  chain: string;
  table: string;
  kind: ChainBreakKind;
  /** The row where the chain stops holding (null when the row is gone: truncated). */
  rowId: string | null;
  seq: string | null;
  expected: string;
  found: string;
}

export interface ChainHead {
  seq: string;
  hash: string;
}

export interface ChainReport {
  chain: string;
  table: string;
  /** Links checked before the first break (all of them when intact). */
  verifiedRows: number;
  /** The last link verified: what an operator records as an anchor. */
  head: ChainHead | null;
  firstBreak: ChainBreak | null;
}

export interface VerifyOptions {
  /** Links read per statement (bounds memory and one statement's time). */
  batchRows?: number;
  /** A head recorded earlier: the chain must still reach it, with the same hash. */
  anchor?: ChainHead;
  signal?: AbortSignal;
}

interface LinkRow {
  id: string;
  seq: string;
  hash: string;
  content: string;
}

/**
 * Walks the chain from its first link, recomputing every hash in Node from
 * the row's columns (nothing the database computed is trusted), and stops at
 * the first link that does not hold.
 */
export async function verifyChain(
  query: ChainQuery,
  spec: ChainSpec,
  options: VerifyOptions = {},
): Promise<ChainReport> {
  const batchRows = options.batchRows ?? 5_000;
  assert.ok(Number.isInteger(batchRows) && batchRows > 0, 'batchRows must be a positive integer');
  const { table, seqColumn: seq, hashColumn: hash } = spec;
  const sql = `SELECT t.${spec.idColumn}::text AS id, t.${seq}::text AS seq, t.${hash}::text AS hash,
                      ${chainContentSql(spec, 't')} AS content
                 FROM ${table} t WHERE t.${seq} > $1 ORDER BY t.${seq} LIMIT $2`;
  const report: ChainReport = {
    chain: spec.chain,
    table,
    verifiedRows: 0,
    head: null,
    firstBreak: null,
  };
  const fail = (kind: ChainBreakKind, row: LinkRow | null, expected: string, found: string) => {
    report.firstBreak = {
      chain: spec.chain,
      table,
      kind,
      rowId: row?.id ?? null,
      seq: row?.seq ?? null,
      expected,
      found,
    };
    return report;
  };
  let prevHash = CHAIN_GENESIS;
  let next = 1n;
  for (;;) {
    options.signal?.throwIfAborted();
    const rows = await query<LinkRow>(sql, [(next - 1n).toString(), batchRows], options.signal);
    for (const row of rows) {
      if (BigInt(row.seq) !== next)
        return fail('sequence_gap', row, `seq ${next}`, `seq ${row.seq}`);
      const expected = linkHash(prevHash, row.content);
      if (row.hash !== expected) return fail('hash_mismatch', row, expected, row.hash);
      if (options.anchor?.seq === row.seq && options.anchor.hash !== row.hash) {
        return fail('anchor_mismatch', row, options.anchor.hash, row.hash);
      }
      prevHash = row.hash;
      report.head = { seq: row.seq, hash: row.hash };
      report.verifiedRows++;
      next++;
    }
    if (rows.length < batchRows) break;
  }
  if (options.anchor && BigInt(options.anchor.seq) >= next) {
    return fail('truncated', null, `a link at seq ${options.anchor.seq}`, `last seq ${next - 1n}`);
  }
  return findUnchained(query, spec, report, options.signal);
}

/** A member row outside the chain (only possible with the seal and the constraints switched off). */
async function findUnchained(
  query: ChainQuery,
  spec: ChainSpec,
  report: ChainReport,
  signal?: AbortSignal,
): Promise<ChainReport> {
  const member = spec.memberWhere ? `(${spec.memberWhere}) AND ` : '';
  const rows = await query<{ id: string }>(
    `SELECT ${spec.idColumn}::text AS id FROM ${spec.table}
      WHERE ${member}(${spec.seqColumn} IS NULL OR ${spec.hashColumn} IS NULL) LIMIT 1`,
    [],
    signal,
  );
  if (rows.length === 0) return report;
  report.firstBreak = {
    chain: spec.chain,
    table: spec.table,
    kind: 'unchained_row',
    rowId: rows[0].id,
    seq: null,
    expected: 'a place in the chain',
    found: 'none',
  };
  return report;
}

/** One line naming exactly where a chain stops holding. */
export function describeBreak(b: ChainBreak): string {
  const at =
    b.rowId === null ? 'its end' : `row ${b.rowId}${b.seq === null ? '' : ` (seq ${b.seq})`}`;
  return `${b.chain}: ${b.kind} in ${b.table} at ${at}: expected ${b.expected}, found ${b.found}`;
}
