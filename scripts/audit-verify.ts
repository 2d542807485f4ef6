import { Client } from 'pg';
import { readEnv, env } from '@dlock/config';
import {
  AUDIT_CHAINS,
  AUDIT_CHAIN_NAMES,
  describeBreak,
  verifyChain,
  type ChainHead,
  type ChainQuery,
} from '@dlock/persistence';
import type { DatabaseName } from '../migrations';

/**
 * `npm run audit:verify [-- --anchor <chain>=<seq>:<hash> ...]`: verifies the
 * audit chains of every database whose URL is set (docs/audit.md). Prints one
 * line per chain with its head (record it: it is the anchor of a later run),
 * or exactly where the chain first stops holding. Exit 0 intact, 1 a break,
 * 2 could not verify. Reads only, in read-only sessions.
 */
const STATEMENT_TIMEOUT_MS = 120_000;

function parseAnchors(args: string[]): Map<string, ChainHead> {
  const anchors = new Map<string, ChainHead>();
  for (let i = 0; i < args.length; i++) {
    const m =
      args[i] === '--anchor'
        ? /^([a-z_]+)=([1-9][0-9]{0,18}):([0-9a-f]{64})$/.exec(args[i + 1] ?? '')
        : null;
    if (!m || !AUDIT_CHAIN_NAMES.includes(m[1])) {
      throw new Error(
        `bad argument "${args[i]} ${args[i + 1] ?? ''}": expected --anchor <chain>=<seq>:<64 hex>, chain one of ${AUDIT_CHAIN_NAMES.join(', ')}`,
      );
    }
    anchors.set(m[1], { seq: m[2], hash: m[3] });
    i++;
  }
  return anchors;
}

async function verifyDatabase(
  db: DatabaseName,
  url: string,
  anchors: Map<string, ChainHead>,
): Promise<number> {
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
    for (const spec of AUDIT_CHAINS[db]) {
      const report = await verifyChain(query, spec, { anchor: anchors.get(spec.chain) });
      if (report.firstBreak) {
        breaks++;
        console.log(
          `[audit] ${db} BREAK ${describeBreak(report.firstBreak)} (${report.verifiedRows} link(s) before it hold)`,
        );
      } else {
        const head = report.head ? `head ${report.head.seq}:${report.head.hash}` : 'empty';
        console.log(`[audit] ${db} ok ${spec.chain}: ${report.verifiedRows} link(s), ${head}`);
      }
    }
  } finally {
    await client.end();
  }
  return breaks;
}

async function main(): Promise<number> {
  const anchors = parseAnchors(process.argv.slice(2));
  const config = readEnv({
    LOCKDB_URL: env.optionalPostgresUrl(),
    PAYDB_URL: env.optionalPostgresUrl(),
    PROXYDB_URL: env.optionalPostgresUrl(),
  });
  const targets: [DatabaseName, string | undefined][] = [
    ['lockdb', config.LOCKDB_URL],
    ['paydb', config.PAYDB_URL],
    ['proxydb', config.PROXYDB_URL],
  ];
  if (targets.every(([, url]) => !url)) {
    console.error(
      '[audit] no database URL set (LOCKDB_URL, PAYDB_URL, PROXYDB_URL): nothing verified',
    );
    return 2;
  }
  let breaks = 0;
  for (const [db, url] of targets) if (url) breaks += await verifyDatabase(db, url, anchors);
  return breaks > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('[audit] could not verify:', (err as Error).message);
    process.exit(2);
  },
);
