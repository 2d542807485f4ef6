import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Client } from 'pg';
import { readDatabaseUrls, type EnvSource } from '@dlock/config/env';
import {
  auditChainNames,
  auditChains,
  registerAuditChains,
  describeBreak,
  emptyCheckpoint,
  headLine,
  verifyChain,
  verifyChainSince,
  type ChainCheckpoint,
  type ChainHead,
  type ChainQuery,
  type ChainReport,
} from '@dlock/persistence/audit';
import { PAYOUT_AUDIT_CHAIN_LIST } from '@dlock/payout-contract/audit-chains';
import type { DatabaseName } from '../migrations';

/**
 * `npm run audit:verify [-- --heads <file>] [-- --anchor <chain>=<digest> --anchor-heads <file>]
 * [-- --breaks-max <n>]`: verifies the audit chains (one per partition:
 * payout, account, lock key) of every database whose URL is set
 * (docs/audit.md). Prints one line per intact chain with its partitions, links
 * and heads digest (record the digest externally: with the head list
 * `--heads` wrote, it is the anchor of a later run), or one line per break of
 * a broken chain, every break of it up to --breaks-max, then how many more.
 * Exit 0 intact, 1 a break, 2 could not verify. Reads only, in read-only sessions.
 *
 * `--checkpoint <file> [--settle-ms <ms>]` verifies only the links appended
 * since the checkpoints in `file` (all of them the first time), then records
 * the new checkpoints there (docs/audit.md, "Checkpoints"): its cost follows
 * what was appended, not the history. Without it the walk is full.
 *
 * `auditVerify` is the command without its process: the tests call it in
 * their own, beside a few runs of the real command (test/medium/audit-chain.spec.ts).
 */
// The payout services' chains beside the lock service's (docs/audit.md).
registerAuditChains(PAYOUT_AUDIT_CHAIN_LIST);

const STATEMENT_TIMEOUT_MS = 120_000;
/** Breaks listed per chain by default; the rest are counted ("and N more"). */
const BREAKS_LISTED_DEFAULT = 20;
const BREAKS_LISTED_MAX = 10_000;
const USAGE =
  'expected --heads <file>, --anchor-heads <file>, --anchor <chain>=<64 hex>, ' +
  `--breaks-max <1..${BREAKS_LISTED_MAX}>, chain one of `;

/** Where the report's lines go: stdout in the command. */
type Print = (line: string) => void;

interface Args {
  headsOut?: string;
  anchorHeads?: string;
  digests: Map<string, string>;
  breaksMax: number;
  checkpointFile?: string;
  settleMs: number;
}

function parseArgs(args: string[]): Args {
  const parsed: Args = { digests: new Map(), breaksMax: BREAKS_LISTED_DEFAULT, settleMs: 60_000 };
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1] ?? ''];
    const m = /^([a-z_]+)=([0-9a-f]{64})$/.exec(value);
    const n = /^[1-9][0-9]{0,4}$/.test(value) ? Number(value) : 0;
    if (flag === '--heads' && value) parsed.headsOut = value;
    else if (flag === '--anchor-heads' && value) parsed.anchorHeads = value;
    else if (flag === '--anchor' && m && auditChainNames().includes(m[1]))
      parsed.digests.set(m[1], m[2]);
    else if (flag === '--breaks-max' && n >= 1 && n <= BREAKS_LISTED_MAX) parsed.breaksMax = n;
    else if (flag === '--checkpoint' && value) parsed.checkpointFile = value;
    else if (flag === '--settle-ms' && /^(0|[1-9][0-9]{0,6})$/.test(value) && +value <= 3_600_000)
      parsed.settleMs = Number(value);
    else
      throw new Error(`bad argument "${flag} ${value}": ${USAGE}${auditChainNames().join(', ')}`);
  }
  if (parsed.digests.size > 0 && !parsed.anchorHeads) {
    throw new Error('--anchor needs --anchor-heads <file>: the head list its digest covers');
  }
  return parsed;
}

/**
 * The anchored heads of each chain, from a head list written by `--heads`,
 * trusted only when its lines hash to the digest recorded for the chain.
 */
function readAnchors(args: Args): Map<string, Map<string, ChainHead>> {
  const anchors = new Map<string, Map<string, ChainHead>>();
  if (!args.anchorHeads) return anchors;
  const lines = readFileSync(args.anchorHeads, 'utf8').split('\n').filter(Boolean);
  for (const [chain, digest] of args.digests) {
    const heads = new Map<string, ChainHead>();
    const hash = createHash('sha256');
    for (const line of lines) {
      const [c, partition, seq, h] = line.split('\t');
      if (c !== chain) continue;
      heads.set(partition, { seq, hash: h });
      hash.update(headLine({ partition, seq, hash: h }), 'utf8');
    }
    if (hash.digest('hex') !== digest) {
      throw new Error(`${args.anchorHeads}: the ${chain} heads do not hash to the recorded digest`);
    }
    anchors.set(chain, heads);
  }
  return anchors;
}

/** Every break kept, then how many more there are, then the chain's counts. */
function printBreaks(db: DatabaseName, report: ChainReport, breaksMax: number, print: Print): void {
  for (const b of report.breaks) print(`[audit] ${db} BREAK ${describeBreak(b)}`);
  const more = report.breakCount - report.breaks.length;
  if (more > 0) {
    print(
      `[audit] ${db} BREAK ${report.chain}: and ${more} more break(s) not listed (--breaks-max ${breaksMax})`,
    );
  }
  print(
    `[audit] ${db} broken ${report.chain}: ${report.breakCount} break(s); ${report.partitions} partition(s), ${report.verifiedRows} link(s) hold`,
  );
}

/** The checkpoints a `--checkpoint` file holds, by chain (none yet: an empty map). */
function readCheckpoints(file: string): Map<string, ChainCheckpoint> {
  if (!existsSync(file)) return new Map();
  const list = JSON.parse(readFileSync(file, 'utf8')) as ChainCheckpoint[];
  return new Map(list.map((cp) => [cp.chain, cp]));
}

/** Verifies what was appended to each chain of `db` since its checkpoint; moves the checkpoints. */
async function verifySince(
  db: DatabaseName,
  query: ChainQuery,
  checkpoints: Map<string, ChainCheckpoint>,
  settleMs: number,
  print: Print,
): Promise<number> {
  let breaks = 0;
  for (const spec of auditChains(db)) {
    const before = checkpoints.get(spec.chain) ?? emptyCheckpoint(spec.chain);
    const report = await verifyChainSince(query, spec, before, { settleMs });
    checkpoints.set(spec.chain, report.checkpoint);
    if (report.firstBreak) {
      breaks++;
      print(`[audit] ${db} BREAK ${describeBreak(report.firstBreak)}`);
      print(`[audit] ${db} broken ${spec.chain}: since checkpoint ${before.links}`);
      continue;
    }
    print(
      `[audit] ${db} ok ${spec.chain}: checkpointed, ${report.verifiedRows} new link(s), ${report.checkpoint.links} link(s) in all`,
    );
  }
  return breaks;
}

async function verifyDatabase(
  db: DatabaseName,
  url: string,
  anchors: Map<string, Map<string, ChainHead>>,
  headsOut: string[] | null,
  args: Args,
  checkpoints: Map<string, ChainCheckpoint> | null,
  print: Print,
): Promise<number> {
  const { breaksMax } = args;
  const client = new Client({
    connectionString: url,
    connectionTimeoutMillis: 5_000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'audit-verify',
    options: '-c default_transaction_read_only=on',
  });
  await client.connect();
  const query: ChainQuery = async <R>(sql: string, params: unknown[]) =>
    (await client.query(sql, params)).rows as R[];
  let breaks = 0;
  try {
    if (checkpoints) return await verifySince(db, query, checkpoints, args.settleMs, print);
    for (const spec of auditChains(db)) {
      const report = await verifyChain(query, spec, {
        anchor: anchors.get(spec.chain),
        collectHeads: headsOut !== null,
        everyBreak: { keptMax: breaksMax },
      });
      if (report.breakCount > 0) {
        breaks++;
        printBreaks(db, report, breaksMax, print);
        continue;
      }
      print(
        `[audit] ${db} ok ${spec.chain}: ${report.partitions} partition(s), ${report.verifiedRows} link(s), heads digest ${report.headsDigest}`,
      );
      for (const h of report.heads ?? []) headsOut?.push(`${spec.chain}\t${headLine(h)}`);
    }
  } finally {
    await client.end();
  }
  return breaks;
}

async function verify(
  argv: string[],
  env: EnvSource,
  print: Print,
  printError: Print,
): Promise<number> {
  const args = parseArgs(argv);
  const anchors = readAnchors(args);
  const headsOut = args.headsOut ? [] : null;
  const config = readDatabaseUrls(env);
  const targets: [DatabaseName, string | undefined][] = [
    ['lockdb', config.LOCKDB_URL],
    ['paydb', config.PAYDB_URL],
    ['proxydb', config.PROXYDB_URL],
  ];
  if (targets.every(([, url]) => !url)) {
    printError(
      '[audit] no database URL set (LOCKDB_URL, PAYDB_URL, PROXYDB_URL): nothing verified',
    );
    return 2;
  }
  const checkpoints = args.checkpointFile ? readCheckpoints(args.checkpointFile) : null;
  let breaks = 0;
  for (const [db, url] of targets) {
    if (url) breaks += await verifyDatabase(db, url, anchors, headsOut, args, checkpoints, print);
  }
  if (args.headsOut && headsOut) writeFileSync(args.headsOut, headsOut.join(''), 'utf8');
  if (args.checkpointFile && checkpoints) {
    // A new file renamed over the old: a crash leaves one whole file or the other.
    const tmp = `${args.checkpointFile}.tmp`;
    writeFileSync(tmp, JSON.stringify([...checkpoints.values()], null, 2), 'utf8');
    renameSync(tmp, args.checkpointFile);
  }
  return breaks > 0 ? 1 : 0;
}

/**
 * The command: its exit code (0 intact, 1 a break, 2 could not verify), its report through
 * `print` and the reason it could not verify through `printError`.
 */
export function auditVerify(
  argv: string[],
  env: EnvSource,
  print: Print = console.log,
  printError: Print = console.error,
): Promise<number> {
  return verify(argv, env, print, printError).catch((err: unknown) => {
    printError(`[audit] could not verify: ${(err as Error).message}`);
    return 2;
  });
}

if (require.main === module) {
  void auditVerify(process.argv.slice(2), process.env).then((code) => process.exit(code));
}
