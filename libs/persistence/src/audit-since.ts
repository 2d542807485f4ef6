import assert from 'node:assert/strict';
import { CHAIN_GENESIS, chainContentSql, linkHash, type ChainSpec } from './audit-chain';
import type { ChainBreak, ChainBreakKind, ChainQuery } from './audit-verify';

/**
 * A verified, recorded point of one chain (docs/audit.md, "Checkpoints"):
 * every link appended up to `key` (in the chain's append order) held when it
 * was verified, and `at` was the last of them. A checkpointed pass verifies
 * only what was appended after it, so its cost follows the new work, not the
 * history; rows before it are the full verification's (`npm run audit:verify`).
 */
export interface ChainCheckpoint {
  chain: string;
  /** The append-order key of the last verified link, each column as text; null: nothing yet. */
  key: string[] | null;
  /** That link, re-read first each pass: rewritten or removed, the checkpoint no longer holds. */
  at: { id: string; partition: string; seq: string; hash: string } | null;
  /** Links verified since the first pass, in all. */
  links: string;
  /** The database time up to which appends were settled at the last pass (ISO); null: none yet. */
  settledAt: string | null;
}

export interface SinceOptions {
  /** A row written less than this long ago waits for the next pass: an older write may commit late. */
  settleMs: number;
  batchRows?: number;
  signal?: AbortSignal;
}

export interface SinceReport {
  chain: string;
  table: string;
  /** Links verified by this pass. */
  verifiedRows: number;
  firstBreak: ChainBreak | null;
  /** Where the next pass starts: moved past every link that held, never past a break. */
  checkpoint: ChainCheckpoint;
}

interface AppendedRow {
  part: string;
  id: string;
  seq: string | null;
  hash: string | null;
  content: string;
  prev_hash: string | null;
  settled: boolean;
  key: string[];
}

export function emptyCheckpoint(chain: string): ChainCheckpoint {
  return { chain, key: null, at: null, links: '0', settledAt: null };
}

function breakAt(
  spec: ChainSpec,
  kind: ChainBreakKind,
  at: { part: string; id: string | null; seq: string | null },
  expected: string,
  found: string,
): ChainBreak {
  const { chain, table } = spec;
  return { chain, table, kind, partition: at.part, rowId: at.id, seq: at.seq, expected, found };
}

/** The checkpoint's own link must still be there, unchanged. */
async function checkpointHolds(
  query: ChainQuery,
  spec: ChainSpec,
  cp: ChainCheckpoint,
  signal?: AbortSignal,
): Promise<ChainBreak | null> {
  if (cp.at === null) return null;
  const { table, idColumn, partitionColumn: part, seqColumn: seq, hashColumn: hash } = spec;
  // The id is the append order's last key column: its type lets the primary key find the row.
  const idType = spec.appendOrder.key.find(([name]) => name === idColumn)?.[1] ?? 'text';
  const rows = await query<{ part: string; seq: string | null; hash: string | null }>(
    `SELECT ${part}::text AS part, ${seq}::text AS seq, ${hash}::text AS hash
       FROM ${table} WHERE ${idColumn} = $1::${idType}`,
    [cp.at.id],
    signal,
  );
  const row = rows[0];
  const at = { part: cp.at.partition, id: cp.at.id, seq: cp.at.seq };
  const recorded = `seq ${cp.at.seq} hash ${cp.at.hash}`;
  if (row === undefined) return breakAt(spec, 'truncated', at, recorded, 'no such row');
  if (row.part !== cp.at.partition || row.seq !== cp.at.seq || row.hash !== cp.at.hash) {
    return breakAt(spec, 'anchor_mismatch', at, recorded, `seq ${row.seq} hash ${row.hash}`);
  }
  return null;
}

/**
 * The statement reading the next links appended after a key (`$3`…; none: from
 * the first), on the append-order index, each with its predecessor's hash and
 * whether it was written by the settled time `$2`.
 */
function appendedSql(spec: ChainSpec, after: boolean): string {
  const { table, partitionColumn: part, seqColumn: seq, hashColumn: hash } = spec;
  const keyCols = spec.appendOrder.key.map(([name]) => name);
  const params = spec.appendOrder.key.map(([, type], i) => `$${i + 3}::${type}`);
  const where = [
    spec.memberWhere ?? 'true',
    after ? `(${keyCols.join(', ')}) > (${params.join(', ')})` : 'true',
  ];
  return `SELECT t.${part}::text AS part, t.${spec.idColumn}::text AS id,
                 t.${seq}::text AS seq, t.${hash}::text AS hash,
                 ${chainContentSql(spec, 't')} AS content, p.${hash}::text AS prev_hash,
                 t.${spec.appendOrder.time} <= $2::timestamptz AS settled,
                 ARRAY[${keyCols.map((c) => `t.${c}::text`).join(', ')}] AS key
            FROM (SELECT * FROM ${table} WHERE ${where.join(' AND ')}
                   ORDER BY ${keyCols.join(', ')} LIMIT $1) t
            LEFT JOIN ${table} p ON p.${part} = t.${part} AND p.${seq} = t.${seq} - 1
           ORDER BY ${keyCols.map((c) => `t.${c}`).join(', ')}`;
}

/** What is wrong with one appended link, if anything. */
function problem(row: AppendedRow): [ChainBreakKind, string, string] | null {
  if (row.seq === null || row.hash === null)
    return ['unchained_row', 'a place in the chain', 'none'];
  let prev = CHAIN_GENESIS;
  if (row.seq !== '1') {
    if (row.prev_hash === null) {
      return ['sequence_gap', `seq ${BigInt(row.seq) - 1n}`, `seq ${row.seq} without it`];
    }
    prev = row.prev_hash;
  }
  const expected = linkHash(prev, row.content);
  return row.hash === expected ? null : ['hash_mismatch', expected, row.hash];
}

/**
 * Verifies the links appended to a chain since `checkpoint` (all of them when
 * it is empty), in the chain's append order on its index: each link's hash is
 * recomputed in Node from its columns and its predecessor's stored hash. The
 * walk stops at the first break, or at the first link younger than
 * `settleMs`, and answers the checkpoint to record. Bounded by what was
 * appended since, never by the history (docs/scale.md).
 */
export async function verifyChainSince(
  query: ChainQuery,
  spec: ChainSpec,
  checkpoint: ChainCheckpoint,
  options: SinceOptions,
): Promise<SinceReport> {
  const batchRows = options.batchRows ?? 5_000;
  assert.ok(Number.isInteger(batchRows) && batchRows > 0, 'batchRows must be a positive integer');
  assert.equal(checkpoint.chain, spec.chain, 'a checkpoint of another chain');
  const cp: ChainCheckpoint = { ...checkpoint };
  const report: SinceReport = {
    chain: spec.chain,
    table: spec.table,
    verifiedRows: 0,
    firstBreak: await checkpointHolds(query, spec, cp, options.signal),
    checkpoint: cp,
  };
  if (report.firstBreak) return report;
  const [{ at: settled }] = await query<{ at: string }>(
    `SELECT (now() - make_interval(secs => $1::double precision / 1000))::text AS at`,
    [options.settleMs],
    options.signal,
  );
  const since = cp.settledAt;
  for (;;) {
    options.signal?.throwIfAborted();
    const rows = await query<AppendedRow>(
      appendedSql(spec, cp.key !== null),
      [batchRows, settled, ...(cp.key ?? [])],
      options.signal,
    );
    for (const row of rows) {
      if (!row.settled) return settle(query, spec, report, since, settled, options.signal);
      const found = problem(row);
      if (found) {
        report.firstBreak = breakAt(spec, found[0], row, found[1], found[2]);
        return report;
      }
      cp.key = row.key;
      cp.at = { id: row.id, partition: row.part, seq: row.seq!, hash: row.hash! };
      cp.links = (BigInt(cp.links) + 1n).toString();
      report.verifiedRows++;
    }
    if (rows.length < batchRows) break;
  }
  return settle(query, spec, report, since, settled, options.signal);
}

/**
 * Every settled link held: looks for a record whose chain must exist and does
 * not end as it should, among those that changed since the last pass, and
 * moves the checkpoint's settled time on when there is none.
 */
async function settle(
  query: ChainQuery,
  spec: ChainSpec,
  report: SinceReport,
  since: string | null,
  settled: string,
  signal?: AbortSignal,
): Promise<SinceReport> {
  if (spec.coverRecentSql) await cover(query, spec, report, since, signal);
  if (!report.firstBreak) report.checkpoint.settledAt = settled;
  return report;
}

async function cover(
  query: ChainQuery,
  spec: ChainSpec,
  report: SinceReport,
  since: string | null,
  signal?: AbortSignal,
): Promise<void> {
  const rows = await query<{ id: string; expected: string; found: string }>(
    `SELECT c.* FROM (${spec.coverRecentSql!}) c LIMIT 1`,
    [since ?? '-infinity'],
    signal,
  );
  const u = rows[0];
  if (u) {
    const at = { part: u.id, id: null, seq: null };
    report.firstBreak = breakAt(
      spec,
      'uncovered_partition',
      at,
      `a chain ending in ${u.expected}`,
      u.found,
    );
  }
}
