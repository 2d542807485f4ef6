/**
 * `npm run bench:scale` (docs/scale.md): seeds paydb, proxydb and lockdb with
 * a year of history (BENCH_SCALE_PAYOUTS payouts, default 2 million: three
 * transitions, two postings and one rail attempt each, so about five times
 * as many ledger and audit rows), then times every periodic or per-request
 * read the services make, on the history and on empty databases, and prints
 * each statement's plan (EXPLAIN ANALYZE) on the history. The reads are the
 * services' own code (repositories, detective checks, the audit verifier),
 * pointed at the seeded databases. Not part of `npm test`.
 *
 *   npm run build && BENCH_SCALE_PAYOUTS=200000 npm run bench:scale
 *   BENCH_SCALE_PLANS=0 (no plans) BENCH_SCALE_REPEAT=5 BENCH_SCALE_BATCH=50000
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import 'reflect-metadata';
import { MIGRATIONS, type DatabaseName } from '../../migrations';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { loadGate, reportWithLoad } from '../load-gate';
import { withClient } from '../../libs/testing/src/postgres';
import { seedHistory } from './history';
import { PASSES, type Recorder, type Statement } from './passes';
import { machineLine } from '../lock-server/etcd-common';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const PAYOUTS = Number(process.env.BENCH_SCALE_PAYOUTS ?? 2_000_000);
const BATCH = Number(process.env.BENCH_SCALE_BATCH ?? 50_000);
const REPEAT = Number(process.env.BENCH_SCALE_REPEAT ?? 5);
const PLANS = process.env.BENCH_SCALE_PLANS !== '0';
const REPORT = path.join(ROOT, process.env.BENCH_REPORT ?? 'bench/reports/scale.md');

type Urls = Record<DatabaseName, string>;

async function databases(adminUrl: string, side: string): Promise<Urls> {
  return {
    lockdb: await createMigratedDatabase(adminUrl, `${side}_lockdb`, MIGRATIONS.lockdb),
    paydb: await createMigratedDatabase(adminUrl, `${side}_paydb`, MIGRATIONS.paydb),
    proxydb: await createMigratedDatabase(adminUrl, `${side}_proxydb`, MIGRATIONS.proxydb),
  };
}

/** A pass's statements, recorded as they run, each with the database it ran on. */
function recorder(urls: Urls, clients: Record<DatabaseName, Client>): Recorder {
  const seen: Statement[] = [];
  return {
    seen,
    urls,
    query: (db) => async (sql, params) => {
      seen.push({ db, sql, params: params ?? [] });
      return (await clients[db].query(sql, params)).rows;
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Each pass REPEAT times on `urls`; answers the median milliseconds per pass, and the statements. */
async function timePasses(urls: Urls): Promise<Map<string, { ms: number; seen: Statement[] }>> {
  const clients = {} as Record<DatabaseName, Client>;
  for (const db of Object.keys(urls) as DatabaseName[]) {
    clients[db] = new Client({ connectionString: urls[db] });
    await clients[db].connect();
  }
  const out = new Map<string, { ms: number; seen: Statement[] }>();
  try {
    for (const pass of PASSES) {
      const state = await pass.prepare?.(urls);
      const times: number[] = [];
      let seen: Statement[] = [];
      for (let r = 0; r < (pass.repeat ?? REPEAT); r++) {
        const rec = recorder(urls, clients);
        const started = process.hrtime.bigint();
        await pass.run(rec, state);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
        seen = rec.seen;
      }
      out.set(pass.name, { ms: median(times), seen });
    }
  } finally {
    await Promise.all(Object.values(clients).map((c) => c.end()));
  }
  return out;
}

/** The plan of each distinct statement a pass ran last, with the rows it actually read. */
async function plans(urls: Urls, seen: Statement[]): Promise<string[]> {
  const out: string[] = [];
  const distinct = new Map(seen.map((s) => [s.sql, s]));
  for (const s of distinct.values()) {
    const plan = await withClient(urls[s.db], (c) =>
      c.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${s.sql}`,
        s.params,
      ),
    ).catch((err: Error) => ({ rows: [{ 'QUERY PLAN': `(not explained: ${err.message})` }] }));
    out.push(`-- ${s.db}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
  return out;
}

/** The report: what ran where, the passes' medians on both copies, and the plans on the history. */
async function report(
  empty: Urls,
  history: Urls,
  seeded: string,
  seedSeconds: number,
): Promise<string[]> {
  const onEmpty = await timePasses(empty);
  const onHistory = await timePasses(history);
  const lines = [
    '# Periodic and per-request reads on a year of history (docs/scale.md)',
    '',
    `- machine: ${machineLine()}; embedded PostgreSQL, defaults`,
    `- command: \`npm run build && BENCH_SCALE_PAYOUTS=${PAYOUTS} BENCH_SCALE_REPEAT=${REPEAT} npm run bench:scale\``,
    `- history: ${seeded} (seeded in ${seedSeconds} s, set-based, the tables' triggers on)`,
    `- each pass is the services' own code; the median of ${REPEAT} runs, 1 for the passes that read the whole history on purpose`,
    '',
    `| pass | empty (ms) | ${PAYOUTS} payouts of history (ms) |`,
    '| --- | ---: | ---: |',
    ...PASSES.map(
      (p) =>
        `| ${p.name} | ${onEmpty.get(p.name)!.ms.toFixed(1)} | ${onHistory.get(p.name)!.ms.toFixed(1)} |`,
    ),
    '',
  ];
  if (!PLANS) return lines;
  for (const pass of PASSES) {
    lines.push(`## ${pass.name}`, '', '```');
    lines.push(...(await plans(history, onHistory.get(pass.name)!.seen)), '```', '');
  }
  return lines;
}

async function main(): Promise<void> {
  const gate = loadGate('bench:scale');
  // The seals take an advisory lock per rail attempt: a batch holds one per row until it commits.
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', 'bench-scale-pg'),
    settings: ['max_locks_per_transaction=1024'],
  });
  try {
    const empty = await databases(pg.adminUrl, 'empty');
    const history = await databases(pg.adminUrl, 'history');
    console.log(`[bench] seeding ${PAYOUTS} payouts (batches of ${BATCH})`);
    const started = Date.now();
    const seeded = await seedHistory(history, { payouts: PAYOUTS, batch: BATCH });
    const lines = await report(empty, history, seeded, Math.round((Date.now() - started) / 1000));
    const text = `${reportWithLoad(gate, lines.join('\n'))}\n`;
    console.log(text);
    writeFileSync(REPORT, text);
    console.log(`[bench] wrote ${path.relative(ROOT, REPORT)}`);
  } finally {
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error('[bench] failed:', err);
  process.exit(1);
});
