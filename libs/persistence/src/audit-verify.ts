import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
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
  /** A record whose partition must have a chain ending a certain way has not: a chain deleted whole. */
  | 'uncovered_partition'
  /** The link at an anchored head differs from what was recorded: history rewritten. */
  | 'anchor_mismatch'
  /** A partition ends before its anchored head, or is gone: its tail (or all of it) was removed. */
  | 'truncated';

export interface ChainBreak {
  chain: string;
  table: string;
  kind: ChainBreakKind;
  /** The partition (payout, account, lock key) whose chain stops holding. */
  partition: string | null;
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

/** One partition's last link: a line of the head list an anchor digest covers. */
export interface PartitionHead extends ChainHead {
  partition: string;
}

export interface ChainReport {
  chain: string;
  table: string;
  partitions: number;
  /**
   * Links that hold: those checked before the first break when the walk stops
   * there, every link that holds with `everyBreak` (all of them when intact).
   */
  verifiedRows: number;
  /** sha256 over every partition's head line, in the walk's order: what an operator records. */
  headsDigest: string;
  /** The head list itself, when asked for (`collectHeads`). */
  heads?: PartitionHead[];
  firstBreak: ChainBreak | null;
  /** The breaks found, in walk order: the first only, or with `everyBreak` up to its `keptMax`. */
  breaks: ChainBreak[];
  /** How many breaks were found in all (with `everyBreak`, also those not kept). */
  breakCount: number;
}

export interface VerifyOptions {
  /** Links read per statement (bounds memory and one statement's time). */
  batchRows?: number;
  /** Heads recorded earlier, by partition: each partition must still reach its head, unchanged. */
  anchor?: ReadonlyMap<string, ChainHead>;
  collectHeads?: boolean;
  /**
   * Walk the whole chain and report every break (the first `keptMax` of them,
   * the rest only counted) instead of stopping at the first, as the
   * reconciler's periodic pass does (docs/audit.md).
   */
  everyBreak?: { keptMax: number };
  signal?: AbortSignal;
}

interface LinkRow {
  part: string;
  id: string;
  seq: string;
  hash: string;
  content: string;
}

/** The text a head list is digested as: one `partition<TAB>seq<TAB>hash` line per partition. */
export function headLine(h: PartitionHead): string {
  return `${h.partition}\t${h.seq}\t${h.hash}\n`;
}

/**
 * A walk through every partition's chain, one link at a time: it stops at the
 * first break, or with `everyBreak` records it and walks on from the stored
 * link, so one tampered row is one break and the next one is found too.
 */
class ChainWalk {
  readonly report: ChainReport;
  private readonly digest = createHash('sha256');
  private readonly anchored = new Set<string>();
  private readonly keptMax: number;
  private current: PartitionHead | null = null;

  constructor(
    private readonly spec: ChainSpec,
    private readonly options: VerifyOptions,
  ) {
    this.keptMax = options.everyBreak?.keptMax ?? 1;
    this.report = {
      chain: spec.chain,
      table: spec.table,
      partitions: 0,
      verifiedRows: 0,
      headsDigest: '',
      heads: options.collectHeads ? [] : undefined,
      firstBreak: null,
      breaks: [],
      breakCount: 0,
    };
  }

  /** Whether the walk goes on past a break. */
  get walksOn(): boolean {
    return this.options.everyBreak !== undefined;
  }

  /** Records a break; true when the walk goes on past it. */
  fail(kind: ChainBreakKind, at: Partial<LinkRow> | null, expected: string, found: string) {
    const broken: ChainBreak = {
      chain: this.spec.chain,
      table: this.spec.table,
      kind,
      partition: at?.part ?? null,
      rowId: at?.id ?? null,
      seq: at?.seq ?? null,
      expected,
      found,
    };
    this.report.firstBreak ??= broken;
    if (this.report.breaks.length < this.keptMax) this.report.breaks.push(broken);
    this.report.breakCount++;
    return this.walksOn;
  }

  /** Breaks counted, not kept (a query that reported only its first rows). */
  failedBeyondKept(count: number): void {
    this.report.breakCount += count;
  }

  /** What is wrong with `row` after `prev`, if anything: one break per row, the first found. */
  private problem(row: LinkRow, prev: PartitionHead): [ChainBreakKind, string, string] | null {
    const next = (BigInt(prev.seq) + 1n).toString();
    // A link whose predecessor is gone cannot have its own hash checked: it is walked on from.
    if (row.seq !== next) return ['sequence_gap', `seq ${next}`, `seq ${row.seq}`];
    const expected = linkHash(prev.hash, row.content);
    if (row.hash !== expected) return ['hash_mismatch', expected, row.hash];
    const anchor = this.options.anchor?.get(row.part);
    if (anchor?.seq === row.seq && anchor.hash !== row.hash)
      return ['anchor_mismatch', anchor.hash, row.hash];
    return null;
  }

  /** Checks one link; false once the walk stops. */
  step(row: LinkRow): boolean {
    if (this.current?.partition !== row.part && !this.close()) return false;
    const prev = this.current ?? { partition: row.part, seq: '0', hash: CHAIN_GENESIS };
    const problem = this.problem(row, prev);
    if (problem !== null && !this.fail(problem[0], row, problem[1], problem[2])) return false;
    this.current = { partition: row.part, seq: row.seq, hash: row.hash };
    if (problem === null) this.report.verifiedRows++;
    return true;
  }

  /** Ends the current partition: its head goes into the digest; it must reach its anchor. */
  close(): boolean {
    const head = this.current;
    this.current = null;
    if (head === null) return true;
    const anchor = this.options.anchor?.get(head.partition);
    if (anchor) {
      this.anchored.add(head.partition);
      if (BigInt(anchor.seq) > BigInt(head.seq)) {
        const at = { part: head.partition };
        if (!this.fail('truncated', at, `a link at seq ${anchor.seq}`, `last seq ${head.seq}`))
          return false;
      }
    }
    this.report.partitions++;
    this.report.heads?.push(head);
    this.digest.update(headLine(head), 'utf8');
    return true;
  }

  /** After the walk: an anchored partition never seen is a chain removed whole. */
  finish(): void {
    for (const [partition, head] of this.options.anchor ?? []) {
      if (this.anchored.has(partition)) continue;
      if (!this.fail('truncated', { part: partition }, `a link at seq ${head.seq}`, 'no chain'))
        return;
    }
    this.report.headsDigest = this.digest.digest('hex');
  }
}

/**
 * Walks every partition's chain from its first link, recomputing every hash
 * in Node from the row's columns (nothing the database computed is trusted),
 * and stops at the first link that does not hold, or with `everyBreak` walks
 * on to the end. Partitions are walked in the order of the (partition, seq)
 * index, by keyset, so each statement is bounded and uses the index.
 */
export async function verifyChain(
  query: ChainQuery,
  spec: ChainSpec,
  options: VerifyOptions = {},
): Promise<ChainReport> {
  const batchRows = options.batchRows ?? 5_000;
  assert.ok(Number.isInteger(batchRows) && batchRows > 0, 'batchRows must be a positive integer');
  const keptMax = options.everyBreak?.keptMax;
  assert.ok(
    keptMax === undefined || (Number.isInteger(keptMax) && keptMax > 0),
    'everyBreak.keptMax must be a positive integer',
  );
  const { table, partitionColumn: part, seqColumn: seq, hashColumn: hash } = spec;
  const select = `SELECT t.${part}::text AS part, t.${spec.idColumn}::text AS id,
                         t.${seq}::text AS seq, t.${hash}::text AS hash,
                         ${chainContentSql(spec, 't')} AS content
                    FROM ${table} t WHERE t.${seq} IS NOT NULL`;
  const first = `${select} ORDER BY t.${part}, t.${seq} LIMIT $1`;
  const after = `${select} AND (t.${part}, t.${seq}) > ($2, $3::bigint) ORDER BY t.${part}, t.${seq} LIMIT $1`;
  const walk = new ChainWalk(spec, options);
  let last: LinkRow | null = null;
  for (;;) {
    options.signal?.throwIfAborted();
    const rows: LinkRow[] = await query<LinkRow>(
      last === null ? first : after,
      last === null ? [batchRows] : [batchRows, last.part, last.seq],
      options.signal,
    );
    for (const row of rows) if (!walk.step(row)) return walk.report;
    if (rows.length < batchRows) break;
    last = rows[rows.length - 1];
  }
  if (!walk.close()) return walk.report;
  walk.finish();
  if (walk.report.firstBreak && !walk.walksOn) return walk.report;
  return findUncovered(query, spec, walk, keptMax ?? 1, options.signal);
}

/** A member row outside any chain, or a record whose chain is missing (seal or constraints bypassed). */
async function findUncovered(
  query: ChainQuery,
  spec: ChainSpec,
  walk: ChainWalk,
  keptMax: number,
  signal?: AbortSignal,
): Promise<ChainReport> {
  const member = spec.memberWhere ? `(${spec.memberWhere}) AND ` : '';
  // count(*) OVER () is taken before the LIMIT: every such row is counted, the first few named.
  const rows = await query<{ id: string; part: string; total: string }>(
    `SELECT ${spec.idColumn}::text AS id, ${spec.partitionColumn}::text AS part,
            count(*) OVER () AS total
       FROM ${spec.table}
      WHERE ${member}(${spec.seqColumn} IS NULL OR ${spec.hashColumn} IS NULL) LIMIT $1`,
    [keptMax],
    signal,
  );
  for (const row of rows) {
    if (!walk.fail('unchained_row', row, 'a place in the chain', 'none')) return walk.report;
  }
  walk.failedBeyondKept(Number(rows[0]?.total ?? 0) - rows.length);
  if (!spec.coverSql) return walk.report;
  const uncovered = await query<{ id: string; expected: string; found: string; total: string }>(
    `SELECT c.*, count(*) OVER () AS total FROM (${spec.coverSql}) c LIMIT $1`,
    [keptMax],
    signal,
  );
  for (const u of uncovered) {
    const at = { part: u.id };
    if (!walk.fail('uncovered_partition', at, `a chain ending in ${u.expected}`, u.found)) break;
  }
  walk.failedBeyondKept(Number(uncovered[0]?.total ?? 0) - uncovered.length);
  return walk.report;
}

/** One line naming exactly where a chain stops holding. */
export function describeBreak(b: ChainBreak): string {
  const row =
    b.rowId === null ? 'its end' : `row ${b.rowId}${b.seq === null ? '' : ` (seq ${b.seq})`}`;
  const at = b.partition === null ? row : `partition ${b.partition}, ${row}`;
  return `${b.chain}: ${b.kind} in ${b.table} at ${at}: expected ${b.expected}, found ${b.found}`;
}
