/**
 * End-to-end payout benchmark (issue 6): payouts per second through the whole
 * critical section — lock-server, payment-resource, rail-proxy, rail-stub and
 * N executor processes over M accounts — with every guard on, on the
 * PostgreSQL lock backend and on the etcd backend; plus the latency of one
 * payout on an idle system, and the lock-server's share of the time.
 *
 *   npm run build && node dist/bench/e2e/bench.js          # writes bench/reports/e2e.md
 *   BENCH_PAYOUTS=1500 BENCH_BACKENDS=pg node dist/bench/e2e/bench.js   # a quicker look
 *   BENCH_CONFIGS=1x16x64,1x64x128 BENCH_CLEARING_SHARDS=1 BENCH_LATENCY_PAYOUTS=0 ...
 *     (executors x lanes x accounts per throughput run; clearing shards of
 *      payment-resource; 0 skips the one-lane latency run)
 *   BENCH_CPU_PROF=payment-resource,executor ...   # .cpuprofile files under .tmp/bench-e2e-prof/
 *   BENCH_PG_STATEMENTS=1 ...   # prints SQL statements per payout by database (pg_stat_statements)
 *   BENCH_REPORT=bench/reports/tracing.md ...   # where the report goes (default bench/reports/e2e.md)
 *   BENCH_BASE_DIST=/tmp/base/dist BENCH_ROUNDS=5 ...   # tracing cost (docs/tracing.md): every
 *     throughput run is repeated per variant, interleaved (base build, traces off, traces to
 *     memory; base only when its dist/ is given), BENCH_ROUNDS times; medians and spread
 *   BENCH_EXTRA_DISTS=main=/tmp/main/dist BENCH_TRACES_MEMORY=0 ...   # more builds (export off)
 *     in the same interleaved rounds, after base; the memory variant left out
 *   BENCH_NODE_OPTIONS='--max-semi-space-size=64' ...   # adds a variant: this build with
 *     those runtime flags in every service's NODE_OPTIONS (export off), interleaved
 *   BENCH_HISTORY_PAYOUTS=2000000 BENCH_TRACES_MEMORY=0 ...   # adds a 'history' variant:
 *     the same build on databases seeded once with that many payouts of history
 *     (bench/scale/seed.ts, docs/scale.md), interleaved with the empty ones
 *   BENCH_RAW=0 ...   # leaves out the raw payout baseline (raw-payout.ts): the SQL of one
 *     payout, recorded from the services, replayed by a lean client at each configuration's
 *     lanes, once per round; e2e payouts/s is reported as a share of it
 *   BENCH_BARE=0 ...   # leaves out the bare payout (bare-payout.ts): the same statements through
 *     the same hops, each a node:http process with the same Ed25519 work and no framework
 *
 * Starts its own embedded PostgreSQL (under .tmp/), its own etcd (Debian's
 * etcd-server) and every process; stops them all at the end.
 */
import assert from 'node:assert/strict';
import { spawn, execSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import 'reflect-metadata';
import { MIGRATIONS, type DatabaseName } from '../../migrations';
import { startEtcd, type EtcdCluster } from '../../libs/testing/src/etcd';
import { rowId } from '../../libs/persistence/src/row-id';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { TEST_POLICY_PATH, testAppAuthEnv } from '../../libs/testing/src/identity';
import { loadGate, reportWithLoad } from '../load-gate';
import { seedHistory } from '../scale/history';
import { replayLane, sessionOf, templates, type Lane, type Template } from './raw-payout';
import { bareLane, hopsOf, type HopApp } from './bare-payout';
import { machineLine } from '../lock-server/etcd-common';
import { diesWithBench } from '../children';
import { callgrindCounter, underCallgrind, type CallgrindCounter } from '../callgrind';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
/** BENCH_REPORT=bench/reports/tracing.md writes a focused run elsewhere than the full report. */
const REPORT = path.join(ROOT, process.env.BENCH_REPORT ?? 'bench/reports/e2e.md');
/** Per run. Long enough that start-up (JIT, first prepared statements, ramp-up) stops weighing. */
const PAYOUTS = Number(process.env.BENCH_PAYOUTS ?? 3000);
const LATENCY_PAYOUTS = Number(process.env.BENCH_LATENCY_PAYOUTS ?? 30);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'pg,etcd').split(',') as ('pg' | 'etcd')[];
const RUN_TIMEOUT_MS = 60_000;
/** Apps to run under --cpu-prof (profiles land in .tmp/bench-e2e-prof/ when they stop). */
const PROFILE_APPS = (process.env.BENCH_CPU_PROF ?? '').split(',').filter(Boolean);
/** Off by default: the extension costs PostgreSQL CPU the throughput runs should not pay. */
const PG_STATEMENTS = process.env.BENCH_PG_STATEMENTS === '1';
/** payment-resource's PAYMENT_CLEARING_SHARDS (1 = the single clearing-EUR row). */
const CLEARING_SHARDS = Number(process.env.BENCH_CLEARING_SHARDS ?? 16);
/**
 * Repetitions of every throughput run, the variants interleaved within each and every other
 * round in reverse (A B C, C B A): a machine that slows down or speeds up during the run weighs
 * on every variant alike.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
/** A build to compare with (another checkout's dist/, its node_modules beside it). */
const BASE_DIST = process.env.BENCH_BASE_DIST;
/** The raw payout baseline (raw-payout.ts); BENCH_RAW=0 leaves it out. */
const RAW = process.env.BENCH_RAW !== '0';
/** The bare payout beside it (bare-payout.ts), on the raw payout's recording; BENCH_BARE=0 leaves it out. */
const BARE = RAW && process.env.BENCH_BARE !== '0';
/** Payouts of history the 'history' variant runs on (0: no such variant). */
const HISTORY_PAYOUTS = Number(process.env.BENCH_HISTORY_PAYOUTS ?? 0);
/**
 * Payouts recorded, each on an account of its own; the last of those with the fewest
 * statements (warm, on a clearing shard already created) is replayed. 24 over 16 shards
 * repeat a shard.
 */
const RAW_RECORDED = 24;

/** One build and tracing setting every process of a run gets. */
export interface Variant {
  name: string;
  dist: string;
  env: Record<string, string>;
  /** Runs on the one set of databases seeded with history (Pg.history), not on empty ones. */
  history?: true;
  /** Every app runs under callgrind, its dumps here (bench/callgrind.ts; instructions.ts). */
  callgrindDir?: string;
}

/** This build as deployed by default: trace ids propagate, nothing is exported. */
export const TRACES_OFF: Variant = {
  name: 'traces off',
  dist: path.join(ROOT, 'dist'),
  env: { OTEL_TRACES_EXPORTER: 'none' },
};

/** More builds, export off (`name=dir/dist,…`): an earlier main, a build without propagation. */
const EXTRA_DISTS = process.env.BENCH_EXTRA_DISTS ?? '';
/** Runtime flags for every service of one more variant of this build (an operator's NODE_OPTIONS). */
const NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS ?? '';
/** BENCH_TRACES_MEMORY=0 leaves out the export-to-memory variant. */
const TRACES_MEMORY = process.env.BENCH_TRACES_MEMORY !== '0';

const VARIANTS: Variant[] = [
  ...(BASE_DIST ? [{ name: 'base', dist: path.resolve(BASE_DIST), env: {} }] : []),
  ...EXTRA_DISTS.split(',')
    .filter(Boolean)
    .map((spec) => {
      const [name, dist] = spec.split('=');
      return { name, dist: path.resolve(dist), env: { OTEL_TRACES_EXPORTER: 'none' } };
    }),
  TRACES_OFF,
  ...(NODE_OPTIONS
    ? [{ ...TRACES_OFF, name: `node ${NODE_OPTIONS}`, env: { ...TRACES_OFF.env, NODE_OPTIONS } }]
    : []),
  ...(HISTORY_PAYOUTS > 0 ? [{ ...TRACES_OFF, name: 'history', history: true as const }] : []),
  ...(TRACES_MEMORY
    ? [
        {
          name: 'traces to memory',
          dist: path.join(ROOT, 'dist'),
          env: { OTEL_TRACES_EXPORTER: 'memory' },
        },
      ]
    : []),
];

export interface Config {
  executors: number;
  concurrency: number;
  accounts: number;
}

/** Throughput configurations: executor processes × lanes each, over accounts. */
const CONFIGS: Config[] = (process.env.BENCH_CONFIGS ?? '1x16x64,1x32x64,2x16x128')
  .split(',')
  .map((c) => {
    const [executors, concurrency, accounts] = c.split('x').map(Number);
    if (![executors, concurrency, accounts].every((n) => Number.isInteger(n) && n > 0)) {
      throw new Error(`BENCH_CONFIGS: "${c}" is not executors x lanes x accounts`);
    }
    return { executors, concurrency, accounts };
  });

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** CPU seconds (user + system) of one process, from /proc; 0 once it is gone. */
const CLK_TCK = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** pid -> [ppid, comm] of every process on the machine. */
function processTable(): Map<number, [number, string]> {
  const table = new Map<number, [number, string]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      table.set(Number(name), [ppid, comm]);
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

/**
 * CPU seconds by component: our node apps by name, and every postgres / etcd
 * process descended from this bench (the embedded server and its backends).
 */
function cpuByComponent(apps: App[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of apps) {
    if (a.proc.pid !== undefined) out[a.name] = (out[a.name] ?? 0) + procCpuSeconds(a.proc.pid);
  }
  const table = processTable();
  const ours = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 10; hops++) {
      if (p === process.pid) return true;
      p = table.get(p)?.[0] ?? 0;
    }
    return false;
  };
  for (const [pid, [, comm]] of table) {
    const kind = comm.startsWith('postgres') ? 'postgres' : comm === 'etcd' ? 'etcd' : null;
    if (kind && ours(pid)) out[kind] = (out[kind] ?? 0) + procCpuSeconds(pid);
  }
  out.bench = procCpuSeconds(process.pid);
  return out;
}

/** Machine-wide busy and total jiffies, from /proc/stat. */
function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  const idle = cpu[3] + cpu[4];
  return { busy: total - idle, total };
}

export interface Pg {
  admin: string;
  /** The databases seeded with HISTORY_PAYOUTS payouts, shared by every run on them. */
  history?: Record<DatabaseName, string>;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<Pg> {
  // fsync on: the bench measures the real durability cost of each commit.
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', `bench-e2e-pg-${process.pid}`),
    fsync: true,
    settings: [
      ...(PG_STATEMENTS
        ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track_planning=on']
        : []),
      // Seeding the history takes an advisory lock per rail attempt in one batch (bench/scale/seed.ts).
      ...(HISTORY_PAYOUTS > 0 ? ['max_locks_per_transaction=1024'] : []),
    ],
  });
  if (PG_STATEMENTS) {
    const c = new Client({ connectionString: pg.adminUrl });
    await c.connect();
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await c.end();
  }
  return { admin: pg.adminUrl, stop: pg.stop };
}

async function database(pg: Pg, db: DatabaseName, suffix: string): Promise<string> {
  return createMigratedDatabase(pg.admin, `${db}_${suffix}`, MIGRATIONS[db]);
}

export interface App {
  name: string;
  url: string;
  proc: ChildProcess;
  /** Its instruction counter, when the variant runs under callgrind. */
  counter?: CallgrindCounter;
  stop(): Promise<void>;
}

/** The test policy of the build `dist` belongs to (`<build>/deploy/policy`), else this one's. */
function policyOf(dist: string): string {
  const own = path.join(dist, '..', 'deploy', 'policy', 'test-policy.yaml');
  return existsSync(own) ? own : TEST_POLICY_PATH;
}

async function spawnApp(
  app: string,
  env: Record<string, string>,
  variant: Variant = TRACES_OFF,
): Promise<App> {
  const port = await freePort();
  // Authentication on, as everywhere: the development issuer of this run (docs/security.md).
  const auth = await testAppAuthEnv(env.OWNER_ID ?? app);
  const profile = PROFILE_APPS.includes(app)
    ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, '.tmp', 'bench-e2e-prof')}`]
    : [];
  const nodeArgs = [...profile, path.join(variant.dist, 'apps', app, 'main.js')];
  const [command, args] = variant.callgrindDir
    ? underCallgrind(variant.callgrindDir, nodeArgs)
    : [process.execPath, nodeArgs];
  const proc = spawn(command, args, {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      ...auth,
      // Each build under its own test policy: a policy names only the operations its build knows.
      AUTH_POLICY: policyOf(variant.dist),
      ...variant.env,
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  diesWithBench(proc, false);
  // A shared 2-core machine under load has been seen to need more than 30 s to start an app;
  // under valgrind, minutes.
  const started = await untilLive(app, port, proc, variant.callgrindDir ? 900_000 : 120_000);
  return variant.callgrindDir && proc.pid !== undefined
    ? { ...started, counter: callgrindCounter(variant.callgrindDir, proc.pid) }
    : started;
}

/** `proc` as an App once it answers /health/live on `port`; killed if it never does. */
async function untilLive(
  name: string,
  port: number,
  proc: ChildProcess,
  waitMs: number,
): Promise<App> {
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health/live`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || proc.exitCode !== null) {
      proc.kill('SIGKILL');
      throw new Error(`${name} did not start`);
    }
    await sleep(100);
  }
  return {
    name,
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

/** The bare payout's server (bare-server.ts), built beside this file. */
const BARE_SERVER = path.join(__dirname, 'bare-server.js');

/** A node script of the bench as one of the payout's processes, named for the app it stands for. */
async function spawnScript(name: string, script: string, env: Record<string, string>) {
  const port = await freePort();
  const proc = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  diesWithBench(proc, false);
  return untilLive(name, port, proc, 120_000);
}

/** Every app started, or none left running: a failed start stops the ones that did start. */
async function allOrStop(starting: Promise<App>[]): Promise<App[]> {
  const settled = await Promise.allSettled(starting);
  const failed = settled.find((r) => r.status === 'rejected');
  if (!failed) return settled.map((r) => (r as PromiseFulfilledResult<App>).value);
  await Promise.all(settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
  throw failed.reason;
}

/** Sum of a Prometheus sample over the matching label sets. */
async function metric(
  url: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) {
      total += Number(m[3]);
    }
  }
  return total;
}

async function metricAll(apps: App[], name: string, labels: Record<string, string> = {}) {
  let total = 0;
  for (const a of apps) total += await metric(a.url, name, labels);
  return total;
}

interface Stack {
  pgAdmin: string;
  lockdb: string;
  paydb: string;
  proxydb: string;
  lockServer: App;
  payments: App;
  stub: App;
  proxy: App;
  stop(): Promise<void>;
}

/** Env that makes an app record its SQL into `file` (sql-recorder.cjs), or none. */
function recordEnv(app: string, file: string | undefined): Record<string, string> {
  if (!file) return {};
  const recorder = path.join(ROOT, 'bench', 'e2e', 'sql-recorder.cjs');
  return { NODE_OPTIONS: `--require ${recorder}`, BENCH_SQL_RECORD: file, BENCH_SQL_APP: app };
}

export async function startStack(
  pg: Pg,
  backend: 'pg' | 'etcd',
  etcd: EtcdCluster | null,
  variant?: Variant,
  record?: string,
): Promise<Stack> {
  const { lockdb, paydb, proxydb } = variant?.history
    ? historyOf(pg)
    : await freshDatabases(pg, `${backend}_${randomUUID().slice(0, 6)}`);
  const journal = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-stub-')), 'journal.jsonl');
  const lockEnv: Record<string, string> =
    backend === 'pg'
      ? { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb, LOCKDB_POOL_MAX: '32' }
      : { LOCK_BACKEND: 'etcd', ETCD_ENDPOINTS: etcd!.endpoints.join(',') };
  const [lockServer, payments, stub] = await allOrStop([
    spawnApp('lock-server', { ...lockEnv, ...recordEnv('lock-server', record) }, variant),
    spawnApp(
      'payment-resource',
      {
        PAYDB_URL: paydb,
        PAYDB_POOL_MAX: '32',
        PAYMENT_CLEARING_SHARDS: String(CLEARING_SHARDS),
        ...recordEnv('payment-resource', record),
      },
      variant,
    ),
    spawnApp(
      'rail-stub',
      { RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' },
      variant,
    ),
  ]);
  const proxy = await spawnApp(
    'rail-proxy',
    {
      PROXYDB_URL: proxydb,
      RAIL_STUB_URL: stub.url,
      PROXYDB_POOL_MAX: '32',
      ...recordEnv('rail-proxy', record),
    },
    variant,
  ).catch(async (err: unknown) => {
    await Promise.all([lockServer, payments, stub].map((a) => a.stop()));
    throw err;
  });
  return {
    pgAdmin: pg.admin,
    lockdb,
    paydb,
    proxydb,
    lockServer,
    payments,
    stub,
    proxy,
    async stop() {
      await Promise.all([lockServer, payments, stub, proxy].map((a) => a.stop()));
      rmSync(path.dirname(journal), { recursive: true, force: true });
    },
  };
}

async function freshDatabases(pg: Pg, suffix: string): Promise<Record<DatabaseName, string>> {
  const [lockdb, paydb, proxydb] = await Promise.all([
    database(pg, 'lockdb', suffix),
    database(pg, 'paydb', suffix),
    database(pg, 'proxydb', suffix),
  ]);
  return { lockdb, paydb, proxydb };
}

function historyOf(pg: Pg): Record<DatabaseName, string> {
  assert(pg.history, 'a history variant runs only after the history is seeded');
  return pg.history;
}

/**
 * HISTORY_PAYOUTS payouts of history, seeded once (seedHistory) and shared by
 * every run of the history variant: each run adds only its own accounts and
 * payouts, a few thousand beside millions.
 */
async function seedHistoryDatabases(pg: Pg): Promise<Record<DatabaseName, string>> {
  const urls = await freshDatabases(pg, 'history');
  const started = Date.now();
  console.log(`[bench] seeding ${HISTORY_PAYOUTS} payouts of history`);
  await seedHistory(urls, { payouts: HISTORY_PAYOUTS, batch: 50_000 });
  console.log(`[bench] history seeded in ${Math.round((Date.now() - started) / 1000)} s`);
  return urls;
}

/** Accounts with opening balances and PENDING payouts, as the fixtures make them (one transaction). */
export async function seed(paydb: string, accounts: string[], payouts: number): Promise<void> {
  const c = new Client({ connectionString: paydb });
  await c.connect();
  try {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR')
       ON CONFLICT DO NOTHING`,
    );
    const balance = 1_000_000_000;
    for (const a of accounts) {
      await c.query(
        `INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', 'EUR')`,
        [a],
      );
      await c.query(
        `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
         VALUES ($1, $3, 'funding-EUR', -$4::bigint, $2, 'OPENING_BALANCE'),
                ($5, $3, $2, $4::bigint, 'funding-EUR', 'OPENING_BALANCE')`,
        [rowId(), a, rowId(), balance, rowId()],
      );
      await c.query(`UPDATE account SET balance_minor = balance_minor + $1 WHERE account_id = $2`, [
        balance,
        a,
      ]);
    }
    await c.query(
      `UPDATE account SET balance_minor = balance_minor - $1 WHERE account_id = 'funding-EUR'`,
      [balance * accounts.length],
    );
    await c.query('COMMIT');
    const ids = Array.from({ length: payouts }, () => rowId());
    const owners = ids.map((_, i) => accounts[i % accounts.length]);
    await c.query(
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       SELECT id, acct, 100, 'EUR', 'ben-' || left(id::text, 8), 'po-' || id::text
         FROM unnest($1::uuid[], $2::text[]) AS t(id, acct)`,
      [ids, owners],
    );
  } finally {
    await c.end();
  }
}

/** The run's payouts by state: its accounts' only (payout_by_account_state), whatever history lies beside them. */
async function countByState(paydb: string, accounts: string[]): Promise<Record<string, number>> {
  const c = new Client({ connectionString: paydb });
  await c.connect();
  try {
    const res = await c.query<{ state: string; n: string }>(
      `SELECT state, count(*) AS n FROM payout WHERE account_id = ANY($1::text[]) GROUP BY state`,
      [accounts],
    );
    return Object.fromEntries(res.rows.map((r) => [r.state, Number(r.n)]));
  } finally {
    await c.end();
  }
}

export function startExecutors(
  s: Stack,
  n: number,
  concurrency: number,
  tag: string,
  variant?: Variant,
  /** Over the bench's own settings (instructions.ts polls at the executor's default). */
  overrides: Record<string, string> = {},
): Promise<App[]> {
  return allOrStop(
    Array.from({ length: n }, (_, i) =>
      spawnApp(
        'executor',
        {
          OWNER_ID: `bench-${tag}-${i}`,
          LOCK_SERVER_URL: s.lockServer.url,
          PAYMENT_RESOURCE_URL: s.payments.url,
          RAIL_PROXY_URL: s.proxy.url,
          EXECUTOR_POLL_INTERVAL_MS: '20',
          EXECUTOR_CONCURRENCY: String(concurrency),
          EXECUTOR_BATCH_SIZE: '500',
          EXECUTOR_RECOVERY_INTERVAL_MS: '5000',
          ...overrides,
        },
        variant,
      ),
    ),
  );
}

interface RunResult {
  backend: string;
  variant: string;
  round: number;
  executors: number;
  concurrency: number;
  accounts: number;
  payouts: number;
  seconds: number;
  perSecond: number;
  states: Record<string, number>;
  executeMeanMs: number;
  acquireMeanMs: number;
  releaseMeanMs: number;
  lockShare: number;
  serverAcquireMeanMs: number;
  serverReleaseMeanMs: number;
  contended: number;
  fencedOut: number;
  duplicates: number;
  steps: Record<string, number>;
  /** CPU ms per POSTED payout, by component. */
  cpuMsPerPayout: Record<string, number>;
  /** Share of the machine's CPU time that was busy during the run (all processes, ours or not). */
  machineBusy: number;
  /** Share of the machine's CPU time our processes used. */
  oursBusy: number;
  loadAvg1: number;
  loadAvgMax: number;
  /** Payouts whose credit leg went to each clearing account (count of distinct accounts). */
  clearingAccounts: number;
}

const STEPS = [
  'acquire',
  'reread',
  'claim',
  'mark_submitted',
  'submit',
  'record_outcome',
  'post',
  'release',
];

/** payouts = 0 resets the counters; otherwise prints statements per payout by database, busiest first. */
async function statementStats(admin: string, payouts: number): Promise<void> {
  const c = new Client({ connectionString: admin });
  await c.connect();
  try {
    if (payouts === 0) {
      await c.query('SELECT pg_stat_statements_reset()');
      return;
    }
    const res = await c.query<{
      db: string;
      calls: string;
      ms: number;
      planMs: number;
      query: string;
    }>(
      `SELECT d.datname AS db, s.calls::text AS calls, s.total_exec_time AS ms, s.total_plan_time AS "planMs", left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110) AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname <> 'postgres' ORDER BY s.calls DESC`,
    );
    const byDb = new Map<string, number>();
    for (const r of res.rows) byDb.set(r.db, (byDb.get(r.db) ?? 0) + Number(r.calls));
    console.log(
      `[bench] statements per payout: ${[...byDb].map(([db, n]) => `${db}=${f1(n / payouts)}`).join(' ')}`,
    );
    for (const r of res.rows.slice(0, 40)) {
      console.log(
        `  ${f2(Number(r.calls) / payouts).padStart(6)}/payout ${f2(r.ms / Number(r.calls)).padStart(6)} ms exec ${f2(r.planMs / Number(r.calls)).padStart(6)} ms plan  ${r.db.split('_')[0]}: ${r.query}`,
      );
    }
  } finally {
    await c.end();
  }
}

async function clearingAccountsUsed(paydb: string): Promise<number> {
  const c = new Client({ connectionString: paydb });
  await c.connect();
  try {
    const res = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM account WHERE kind = 'CLEARING'`,
    );
    return res.rows[0].n;
  } finally {
    await c.end();
  }
}

/** The bench's own INV-03 check after each run: zero-sum groups, balance = ledger sum. */
export async function ledgerHolds(paydb: string): Promise<boolean> {
  const c = new Client({ connectionString: paydb });
  await c.connect();
  try {
    const groups = await c.query(
      `SELECT 1 FROM ledger_entry GROUP BY txn_group_id HAVING sum(amount_minor) <> 0`,
    );
    const balances = await c.query(
      `SELECT 1 FROM account a LEFT JOIN ledger_entry e USING (account_id)
        GROUP BY a.account_id, a.balance_minor HAVING a.balance_minor <> COALESCE(sum(e.amount_minor), 0)`,
    );
    return groups.rowCount === 0 && balances.rowCount === 0;
  } finally {
    await c.end();
  }
}

async function measure(
  s: Stack,
  backend: string,
  executors: App[],
  cfg: Config,
  payouts: number,
): Promise<RunResult> {
  const accounts = Array.from(
    { length: cfg.accounts },
    (_, i) => `bench-${randomUUID().slice(0, 6)}-${i}`,
  );
  const apps = [s.lockServer, s.payments, s.proxy, s.stub, ...executors];
  const cpuBefore = cpuByComponent(apps);
  const ticksBefore = machineTicks();
  if (PG_STATEMENTS) await statementStats(s.pgAdmin, 0);
  const started = performance.now();
  await seed(s.paydb, accounts, payouts);
  const { states, loadAvgMax } = await untilPosted(s.paydb, accounts, payouts, started);
  const seconds = (performance.now() - started) / 1000;
  const ticksAfter = machineTicks();
  const cpuAfter = cpuByComponent(apps);
  const loadAvg1 = os.loadavg()[0];
  const done = states.POSTED ?? 0;
  const cpu = cpuUse(cpuBefore, cpuAfter, { before: ticksBefore, after: ticksAfter }, done);
  if (PG_STATEMENTS) await statementStats(s.pgAdmin, done);
  if (!(await ledgerHolds(s.paydb))) throw new Error('INV-03 broken after the run');
  return {
    backend,
    variant: '',
    round: 0,
    ...cfg,
    payouts: done,
    seconds,
    perSecond: done / seconds,
    states,
    ...(await scrapedFigures(s, executors)),
    ...cpu,
    loadAvg1,
    loadAvgMax,
    clearingAccounts: await clearingAccountsUsed(s.paydb),
  };
}

/** Polls paydb until `posted` payouts are POSTED or the run times out; the highest load seen. */
export async function untilPosted(
  paydb: string,
  accounts: string[],
  posted: number,
  started: number,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<{ states: Record<string, number>; loadAvgMax: number }> {
  let loadAvgMax = 0;
  let states: Record<string, number>;
  for (;;) {
    states = await countByState(paydb, accounts);
    loadAvgMax = Math.max(loadAvgMax, os.loadavg()[0]);
    if ((states.POSTED ?? 0) >= posted) break;
    if (performance.now() - started > timeoutMs) break;
    await sleep(100);
  }
  return { states, loadAvgMax };
}

type Ticks = ReturnType<typeof machineTicks>;

/** CPU ms per POSTED payout by component, and how busy the machine (and our processes) was. */
function cpuUse(
  cpuBefore: Record<string, number>,
  cpuAfter: Record<string, number>,
  ticks: { before: Ticks; after: Ticks },
  done: number,
): Pick<RunResult, 'cpuMsPerPayout' | 'machineBusy' | 'oursBusy'> {
  const cpuMsPerPayout: Record<string, number> = {};
  let oursSeconds = 0;
  for (const [k, v] of Object.entries(cpuAfter)) {
    const used = v - (cpuBefore[k] ?? 0);
    oursSeconds += used;
    cpuMsPerPayout[k] = done === 0 ? NaN : (used / done) * 1000;
  }
  const { before, after } = ticks;
  const machineSeconds = (after.total - before.total) / CLK_TCK;
  const machineBusy = (after.busy - before.busy) / (after.total - before.total);
  return {
    cpuMsPerPayout,
    machineBusy,
    oursBusy: machineSeconds > 0 ? oursSeconds / machineSeconds : NaN,
  };
}

/** What the run's processes' /metrics say: step and payout means, the lock share, counts. */
async function scrapedFigures(s: Stack, executors: App[]) {
  const mean = async (app: App[], name: string, labels: Record<string, string> = {}) => {
    const sum = await metricAll(app, `${name}_sum`, labels);
    const count = await metricAll(app, `${name}_count`, labels);
    return count === 0 ? NaN : (sum / count) * 1000;
  };
  const execSum = await metricAll(executors, 'payout_execute_seconds_sum');
  const lockSum =
    (await metricAll(executors, 'executor_step_seconds_sum', { step: 'acquire' })) +
    (await metricAll(executors, 'executor_step_seconds_sum', { step: 'release' }));
  const steps: Record<string, number> = {};
  for (const step of STEPS) steps[step] = await mean(executors, 'executor_step_seconds', { step });
  return {
    executeMeanMs: await mean(executors, 'payout_execute_seconds', { outcome: 'posted' }),
    acquireMeanMs: steps.acquire,
    releaseMeanMs: steps.release,
    lockShare: lockSum / execSum,
    serverAcquireMeanMs: await mean([s.lockServer], 'lock_server_op_seconds', {
      op: 'acquire',
      result: 'ok',
    }),
    serverReleaseMeanMs: await mean([s.lockServer], 'lock_server_op_seconds', {
      op: 'release',
      result: 'ok',
    }),
    contended: await metricAll(executors, 'executor_payout_attempts_total', {
      result: 'contended',
    }),
    fencedOut:
      (await metric(s.payments.url, 'lock_fenced_out_total')) +
      (await metric(s.proxy.url, 'lock_fenced_out_total')),
    duplicates: await metric(s.proxy.url, 'rail_duplicate_attempted_total'),
    steps,
  };
}

/** One throughput run on a fresh stack of one variant; every process stopped after it. */
async function throughputRun(
  pg: Pg,
  backend: 'pg' | 'etcd',
  etcd: EtcdCluster | null,
  cfg: Config,
  variant: Variant,
): Promise<RunResult> {
  const s = await startStack(pg, backend, etcd, variant);
  let executors: App[] = [];
  try {
    executors = await startExecutors(
      s,
      cfg.executors,
      cfg.concurrency,
      `${backend}-${cfg.executors}`,
      variant,
    );
    const r = await measure(s, backend, executors, cfg, PAYOUTS);
    console.log(
      `[bench] ${backend} [${variant.name}] N=${cfg.executors}×${cfg.concurrency} M=${cfg.accounts}: ${r.payouts} payouts in ${f1(r.seconds)} s = ${f1(r.perSecond)}/s; ` +
        `steps ${STEPS.map((st) => `${st}=${f1(r.steps[st])}`).join(' ')}; ` +
        `cpu ms/payout ${Object.entries(r.cpuMsPerPayout)
          .map(([k, v]) => `${k}=${f2(v)}`)
          .join(
            ' ',
          )}; machine busy ${f1(r.machineBusy * 100)} % (ours ${f1(r.oursBusy * 100)} %), load ${f1(r.loadAvgMax)}`,
    );
    return r;
  } finally {
    await Promise.all(executors.map((e) => e.stop()));
    await s.stop();
  }
}

/**
 * CPU time per POSTED payout of our node processes and PostgreSQL: on a shared
 * machine it moves far less with other load than payouts/s does.
 */
function appsCpuMs(r: RunResult): number {
  const parts = [
    'executor',
    'lock-server',
    'payment-resource',
    'rail-proxy',
    'rail-stub',
    'postgres',
  ];
  return parts.reduce((sum, k) => sum + (r.cpuMsPerPayout[k] ?? 0), 0);
}

export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Median payouts/s per variant and configuration, the spread of the rounds, and the change against the first variant. */
function tracingCost(results: RunResult[]): string[] {
  if (VARIANTS.length < 2) return [];
  const groups = new Map<string, RunResult[]>();
  for (const r of results) {
    const key = `${r.backend} ${r.executors}×${r.concurrency}×${r.accounts}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const rows: string[] = [];
  for (const [key, runs] of groups) {
    const medians = VARIANTS.map((v) =>
      median(runs.filter((r) => r.variant === v.name).map((r) => r.perSecond)),
    );
    const cpu0 = median(runs.filter((r) => r.variant === VARIANTS[0].name).map(appsCpuMs));
    VARIANTS.forEach((v, i) => {
      const rates = runs.filter((r) => r.variant === v.name).map((r) => r.perSecond);
      const change = i === 0 ? '—' : `${f1(((medians[i] - medians[0]) / medians[0]) * 100)} %`;
      const cpu = runs.filter((r) => r.variant === v.name).map((r) => appsCpuMs(r));
      const cpuChange = i === 0 ? '—' : `${f1(((median(cpu) - cpu0) / cpu0) * 100)} %`;
      rows.push(
        `| ${key} | ${v.name} | ${rates.length} | **${f1(medians[i])}** | ${f1(Math.min(...rates))}–${f1(Math.max(...rates))} | ${rates.map(f1).join(', ')} | ${change} | **${f2(median(cpu))}** | ${f2(Math.min(...cpu))}–${f2(Math.max(...cpu))} | ${cpuChange} |`,
      );
    });
  }
  return [
    '## Variants side by side (tracing: docs/tracing.md; history: docs/scale.md)',
    '',
    `Variants run in turn, each on a fresh stack of processes (and fresh databases, except the history variant's), interleaved within each of ${ROUNDS} round(s): ${VARIANTS.map(
      (v) =>
        `${v.name} (${v.dist === path.join(ROOT, 'dist') ? 'this build' : v.dist}${
          v.history ? `, on ${HISTORY_PAYOUTS} payouts of history` : ''
        }${
          Object.keys(v.env).length
            ? `, ${Object.entries(v.env)
                .map(([k, val]) => `${k}=${val}`)
                .join(' ')}`
            : ''
        })`,
    ).join(
      '; ',
    )}. The change is of the median against the first variant. On a machine shared with other work, payouts/s follows the other load; CPU per payout much less so.`,
    '',
    `| backend / run | variant | runs | median payouts/s | min–max | each run | change vs ${VARIANTS[0].name} | median CPU ms per payout (apps + postgres) | min–max | change vs ${VARIANTS[0].name} |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ];
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** The databases a raw payout replays into (the recording's), and the payout it replays. */
interface RawSetup {
  template: Template;
  /** The template as JSON, for the bare payout's servers (bare-server.ts). */
  templateFile: string;
  urls: Record<string, string>;
  paydb: string;
}

async function onDb<T>(url: string, f: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/**
 * Records the SQL of RAW_RECORDED payouts, one after another, each on an
 * account of its own, on the pg backend (sql-recorder.cjs in every service).
 */
async function recordPayouts(pg: Pg): Promise<RawSetup> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-sql-')), 'sql.jsonl');
  const s = await startStack(pg, 'pg', null, TRACES_OFF, file);
  try {
    const [exec] = await startExecutors(s, 1, 1, 'raw-rec');
    try {
      const cfg = { executors: 1, concurrency: 1, accounts: RAW_RECORDED };
      const r = await measure(s, 'pg', [exec], cfg, RAW_RECORDED);
      if (r.payouts !== RAW_RECORDED)
        throw new Error('raw payout: the recorded payouts did not post');
    } finally {
      await exec.stop();
    }
  } finally {
    await s.stop();
  }
  const payouts = await onDb(
    s.paydb,
    async (c) =>
      (
        await c.query<{ payoutId: string; accountId: string }>(
          `SELECT payout_id::text AS "payoutId", account_id AS "accountId" FROM payout
          ORDER BY (SELECT min(created_at) FROM payout_transition t WHERE t.payout_id = payout.payout_id)`,
        )
      ).rows,
  );
  // A steady-state payout: the first post to each clearing shard creates it in a transaction
  // (docs/payment-resource.md, "The one-statement fast path"), later ones do not.
  const recorded = templates(file, payouts);
  const fewest = Math.min(...recorded.map((t) => t.statements.length));
  const template = recorded.filter((t) => t.statements.length === fewest).at(-1)!;
  rmSync(file, { force: true });
  const templateFile = path.join(path.dirname(file), 'template.json');
  writeFileSync(templateFile, JSON.stringify({ ...template, shared: [...template.shared] }));
  return {
    template,
    templateFile,
    urls: { lockdb: s.lockdb, paydb: s.paydb, proxydb: s.proxydb },
    paydb: s.paydb,
  };
}

interface RawResult {
  round: number;
  cfg: Config;
  payouts: number;
  seconds: number;
  perSecond: number;
  postgresCpuMs: number;
}

/** Fresh PENDING payouts for a replay, split over the configuration's lanes, accounts of their own. */
async function replayLanes(raw: RawSetup, cfg: Config, label: string) {
  const lanes = cfg.executors * cfg.concurrency;
  const accounts = Array.from({ length: Math.max(cfg.accounts, lanes) }, (_, i) => {
    return `${label}-${randomUUID().slice(0, 6)}-${i}`;
  });
  await seed(raw.paydb, accounts, PAYOUTS);
  const rows = await onDb(raw.paydb, async (c) => {
    const q = `SELECT payout_id::text AS "payoutId", account_id AS "accountId" FROM payout
                WHERE account_id = ANY($1) ORDER BY payout_id`;
    return (await c.query<{ payoutId: string; accountId: string }>(q, [accounts])).rows;
  });
  const byLane: Lane[] = Array.from({ length: lanes }, () => ({ payouts: [] }));
  const lane = new Map(accounts.map((a, i) => [a, byLane[i % lanes]]));
  for (const r of rows) lane.get(r.accountId)!.payouts.push(r);
  // The recording's session ended with its executor; the replay's statements name it. A build
  // that keeps closed sessions (closed_at, docs/lock-server.md "Session states") reopens it too;
  // an older one (bench:compare's other build) has no such column.
  await onDb(raw.urls.lockdb, async (c) => {
    const kept = await c.query(
      `SELECT 1 FROM information_schema.columns
        WHERE table_name = 'lock_session' AND column_name = 'closed_at'`,
    );
    const reopen = kept.rowCount === 0 ? '' : ', closed_at = NULL';
    return c.query(
      `INSERT INTO lock_session (session_id, owner_id, ttl_ms, expires_at)
       VALUES ($1, $2, 60000, clock_timestamp() + interval '1 hour')
       ON CONFLICT (session_id) DO UPDATE SET expires_at = EXCLUDED.expires_at${reopen}`,
      sessionOf(raw.template),
    );
  });
  return { accounts, payouts: rows.length, byLane };
}

/** Every replayed payout POSTED and INV-03 holding, or the replay measured nothing. */
async function replayPosted(raw: RawSetup, accounts: string[], payouts: number, label: string) {
  const posted = await onDb(raw.paydb, async (c) => {
    const q = `SELECT count(*)::int AS n FROM payout WHERE account_id = ANY($1) AND state = 'POSTED'`;
    return (await c.query<{ n: number }>(q, [accounts])).rows[0].n;
  });
  if (posted !== payouts) {
    throw new Error(`${label}: ${posted} of ${payouts} replayed payouts reached POSTED`);
  }
  if (!(await ledgerHolds(raw.paydb))) throw new Error(`INV-03 broken after the ${label} run`);
  return posted;
}

/** The recorded payout replayed at the configuration's lanes, each lane on accounts of its own. */
async function rawRun(pg: Pg, raw: RawSetup, cfg: Config, round: number): Promise<RawResult> {
  const { accounts, payouts, byLane } = await replayLanes(raw, cfg, 'raw');
  const cpuBefore = cpuByComponent([]);
  const started = performance.now();
  const clients = byLane.map(() => new Map<string, Client>());
  let seconds: number;
  let cpuAfter: Record<string, number>;
  try {
    await Promise.all(byLane.map((l, i) => replayLane(raw.template, l, raw.urls, clients[i])));
    seconds = (performance.now() - started) / 1000;
    // Before the connections end: an ended backend's CPU time is gone from /proc.
    cpuAfter = cpuByComponent([]);
  } finally {
    const all = clients.flatMap((m) => [...m.values()]);
    await Promise.all(all.map((c) => c.end().catch(() => undefined)));
  }
  const posted = await replayPosted(raw, accounts, payouts, 'raw payout');
  const pgCpu = (cpuAfter.postgres ?? 0) - (cpuBefore.postgres ?? 0);
  const r = {
    round,
    cfg,
    payouts: posted,
    seconds,
    perSecond: posted / seconds,
    postgresCpuMs: (pgCpu / posted) * 1000,
  };
  console.log(
    `[bench] raw payout ${byLane.length} lanes: ${posted} payouts in ${f1(seconds)} s = ${f1(r.perSecond)}/s; postgres ${f2(r.postgresCpuMs)} ms CPU per payout`,
  );
  return r;
}

/** The processes of the bare payout, by the app each stands for. */
const BARE_APPS = ['lock-server', 'payment-resource', 'rail-proxy', 'rail-stub'] as const;

interface BareResult {
  round: number;
  cfg: Config;
  payouts: number;
  perSecond: number;
  /** CPU ms per payout by process; `bench` is the lanes (the executor's part). */
  cpuMsPerPayout: Record<string, number>;
}

/** The recorded payout through the same hops, each a node:http process (bare-payout.ts). */
async function bareRun(pg: Pg, raw: RawSetup, cfg: Config, round: number): Promise<BareResult> {
  const { accounts, payouts, byLane } = await replayLanes(raw, cfg, 'bare');
  const hops = hopsOf(raw.template);
  const env = { BARE_TEMPLATE: raw.templateFile, BARE_DATABASES: JSON.stringify(raw.urls) };
  const stub = await spawnScript('rail-stub', BARE_SERVER, { ...env, BARE_APP: 'rail-stub' });
  const apps = [stub];
  try {
    apps.push(
      ...(await allOrStop(
        BARE_APPS.filter((a) => a !== 'rail-stub').map((a) =>
          spawnScript(a, BARE_SERVER, { ...env, BARE_APP: a, BARE_RAIL_URL: stub.url }),
        ),
      )),
    );
    const urls = Object.fromEntries(apps.map((a) => [a.name, a.url])) as Record<HopApp, string>;
    const cpuBefore = cpuByComponent(apps);
    const started = performance.now();
    await Promise.all(byLane.map((l) => bareLane(hops, l, urls, raw.template)));
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = cpuByComponent(apps);
    const posted = await replayPosted(raw, accounts, payouts, 'bare payout');
    const cpuMsPerPayout = Object.fromEntries(
      Object.keys(cpuAfter).map((k) => [
        k,
        (((cpuAfter[k] ?? 0) - (cpuBefore[k] ?? 0)) / posted) * 1000,
      ]),
    );
    const r = { round, cfg, payouts: posted, perSecond: posted / seconds, cpuMsPerPayout };
    console.log(
      `[bench] bare payout ${byLane.length} lanes: ${posted} payouts in ${f1(seconds)} s = ${f1(r.perSecond)}/s; cpu ms/payout ${Object.entries(
        cpuMsPerPayout,
      )
        .map(([k, v]) => `${k}=${f2(v)}`)
        .join(' ')}`,
    );
    return r;
  } finally {
    await Promise.all(apps.map((a) => a.stop()));
  }
}

const cfgName = (c: Config) => `${c.executors}x${c.concurrency}x${c.accounts}`;

/** Runs grouped by `backend|variant|config`, for the share tables. */
function byBackendVariantConfig(results: RunResult[]): Map<string, RunResult[]> {
  const groups = new Map<string, RunResult[]>();
  for (const r of results) {
    const k = `${r.backend}|${r.variant}|${r.executors}x${r.concurrency}x${r.accounts}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  return groups;
}

/** The raw payout section: the baseline, what one payout sends, and e2e as a share of it. */
function rawSection(raw: RawSetup | null, rawResults: RawResult[], results: RunResult[]): string[] {
  if (!raw || rawResults.length === 0) return [];
  const t = raw.template;
  const byDb = new Map<string, number>();
  for (const st of t.statements) {
    const db = st.db.replace(/_(pg|etcd)_.*$/, '');
    byDb.set(db, (byDb.get(db) ?? 0) + 1);
  }
  const rawMedian = (c: Config) =>
    median(rawResults.filter((r) => cfgName(r.cfg) === cfgName(c)).map((r) => r.perSecond));
  const groups = byBackendVariantConfig(results);
  return [
    '## Raw payout baseline (the same SQL, a lean client, no HTTP, no Nest)',
    '',
    `The statements of one payout, recorded from the services on the pg backend (bench/e2e/sql-recorder.cjs; the executor's polling and the session's heartbeats are shared by all payouts and left out), replayed by \`pg\` clients at each configuration's lanes, one statement after another on the same prepared names, each lane on accounts of its own (bench/e2e/raw-payout.ts). Every replayed payout reached POSTED and INV-03 held.`,
    '',
    `- per payout: **${t.statements.length}** statements (= round trips) in ${t.transactions} transactions; by database: ${[...byDb].map(([d, n]) => `${d} ${n}`).join(', ')}`,
    '',
    '<details><summary>the statements, in order (app, database, first words)</summary>',
    '',
    ...t.statements.map(
      (st, i) =>
        `${i + 1}. ${st.app} · ${st.db.replace(/_(pg|etcd)_.*$/, '')} · \`${st.text.replace(/\s+/g, ' ').trim().slice(0, 72)}\``,
    ),
    '',
    '</details>',
    '',
    '| raw | round | lanes | payouts | wall s | payouts/s | postgres CPU ms per payout |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rawResults.map(
      (r) =>
        `| raw ${cfgName(r.cfg)} | ${r.round} | ${r.cfg.executors * r.cfg.concurrency} | ${r.payouts} | ${f1(r.seconds)} | **${f1(r.perSecond)}** | ${f2(r.postgresCpuMs)} |`,
    ),
    '',
    '| share | backend | variant | executors × lanes × accounts | e2e payouts/s (median) | raw payouts/s (median) | e2e share of raw |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...[...groups].map(([k, rs]) => {
      const [backend, variant, cfg] = k.split('|');
      const e2e = median(rs.map((r) => r.perSecond));
      const base = rawMedian(rs[0]);
      return `| share | ${backend} | ${variant} | ${cfg} | ${f1(e2e)} | ${f1(base)} | **${f1((e2e / base) * 100)} %** |`;
    }),
    '',
  ];
}

/** The bare payout section: what the hops cost with no framework, and e2e beside it. */
function bareSection(bare: BareResult[], results: RunResult[]): string[] {
  if (bare.length === 0) return [];
  const procs = [...BARE_APPS, 'bench', 'postgres'];
  const total = (cpu: Record<string, number>) => procs.reduce((a, k) => a + (cpu[k] ?? 0), 0);
  const groups = byBackendVariantConfig(results);
  const ofCfg = (cfg: string) => bare.filter((b) => cfgName(b.cfg) === cfg);
  return [
    '## Bare payout (the same hops and statements, node:http, no framework)',
    '',
    "The raw payout's recorded statements sent through the same requests as a real payout — acquire, claim, SUBMITTED, the proxy's submit (→ the rail over a fresh connection), ACKED, post, release — each answered by a node:http process standing for its app, with the same Ed25519 work (the grant signed, its proof verified at the claim and the proxy, the payout instruction signed and verified), and nothing else: no Nest, express, guards, validation, logging, metrics or tracing (bench/e2e/bare-payout.ts). The lanes run in the bench process (its column). It is about the least a build of these services can cost on this machine with these hops; the bare servers even do a little a real one does not (they substitute the replayed values, as the raw payout's client does).",
    '',
    `| bare | round | lanes | payouts | payouts/s | CPU ms per payout: ${procs.join(', ')} | total |`,
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...bare.map(
      (b) =>
        `| bare ${cfgName(b.cfg)} | ${b.round} | ${b.cfg.executors * b.cfg.concurrency} | ${b.payouts} | **${f1(b.perSecond)}** | ${procs.map((k) => f2(b.cpuMsPerPayout[k] ?? NaN)).join(', ')} | **${f2(total(b.cpuMsPerPayout))}** |`,
    ),
    '',
    '| share | backend | variant | executors × lanes × accounts | e2e payouts/s (median) | bare payouts/s (median) | e2e share of bare | e2e CPU ms per payout (median) | bare CPU ms per payout (median) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...[...groups].map(([k, rs]) => {
      const [backend, variant, cfg] = k.split('|');
      const e2e = median(rs.map((r) => r.perSecond));
      const base = median(ofCfg(cfg).map((b) => b.perSecond));
      const baseCpu = median(ofCfg(cfg).map((b) => total(b.cpuMsPerPayout)));
      return `| share | ${backend} | ${variant} | ${cfg} | ${f1(e2e)} | ${f1(base)} | **${f1((e2e / base) * 100)} %** | ${f2(median(rs.map(appsCpuMs)))} | ${f2(baseCpu)} |`;
    }),
    '',
  ];
}

/** What the runs of one bench invocation collected, for the report. */
interface Collected {
  results: RunResult[];
  rawResults: RawResult[];
  bareResults: BareResult[];
  raw: RawSetup | null;
  latency: { backend: string; meanMs: number; steps: Record<string, number> }[];
  notes: string[];
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:e2e');
  const t0 = Date.now();
  const pg = await startPostgres();
  const c: Collected = {
    results: [],
    rawResults: [],
    bareResults: [],
    raw: null,
    latency: [],
    notes: [],
  };
  try {
    if (HISTORY_PAYOUTS > 0) pg.history = await seedHistoryDatabases(pg);
    if (RAW) c.raw = await recordPayouts(pg);
    for (const backend of BACKENDS) await measureBackend(pg, backend, c);
  } finally {
    await pg.stop();
    if (c.raw) rmSync(path.dirname(c.raw.templateFile), { recursive: true, force: true });
  }
  const lines = [
    ...reportHeader(Math.round((Date.now() - t0) / 1000)),
    ...throughputSection(c.results),
    ...rawSection(c.raw, c.rawResults, c.results),
    ...bareSection(c.bareResults, c.results),
    ...tracingCost(c.results),
    ...stepsSection(c.results),
    ...cpuSection(c.results),
    ...latencySection(c.latency),
    ...(c.notes.length ? ['## Notes', '', ...c.notes.map((n) => `- ${n}`), ''] : []),
  ];
  writeFileSync(REPORT, `${reportWithLoad(gate, lines.join('\n'))}\n`);
  console.log(`[bench] wrote ${path.relative(ROOT, REPORT)}`);
}

/** Every run on one backend: the latency run, then each round of configs and variants. */
async function measureBackend(pg: Pg, backend: 'pg' | 'etcd', c: Collected): Promise<void> {
  let etcd: EtcdCluster | null = null;
  if (backend === 'etcd') {
    try {
      etcd = await startEtcd({ label: 'bench-e2e-etcd', heartbeatMs: 100, electionMs: 1_000 });
    } catch (err) {
      c.notes.push(`etcd backend skipped: ${(err as Error).message.split('\n')[0]}`);
      return;
    }
  }
  try {
    if (LATENCY_PAYOUTS > 0) c.latency.push(await latencyRun(pg, backend, etcd));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const cfg of CONFIGS) {
        if (c.raw && backend === BACKENDS[0]) {
          c.rawResults.push(await rawRun(pg, c.raw, cfg, round));
          if (BARE) c.bareResults.push(await bareRun(pg, c.raw, cfg, round));
        }
        for (const variant of round % 2 === 1 ? VARIANTS : [...VARIANTS].reverse()) {
          const r = await throughputRun(pg, backend, etcd, cfg, variant);
          c.results.push({ ...r, variant: variant.name, round });
        }
      }
    }
  } finally {
    if (etcd) await etcd.stop();
  }
}

/** Latency of one payout: one executor, one lane, payouts one after another on one account. */
async function latencyRun(
  pg: Pg,
  backend: 'pg' | 'etcd',
  etcd: EtcdCluster | null,
): Promise<Collected['latency'][number]> {
  const s = await startStack(pg, backend, etcd);
  const [exec] = await startExecutors(s, 1, 1, `${backend}-lat`);
  try {
    const r = await measure(
      s,
      backend,
      [exec],
      { executors: 1, concurrency: 1, accounts: 1 },
      LATENCY_PAYOUTS,
    );
    console.log(`[bench] ${backend} latency: ${f1(r.executeMeanMs)} ms per payout`);
    return { backend, meanMs: r.executeMeanMs, steps: r.steps };
  } finally {
    await exec.stop();
    await s.stop();
  }
}

const COMPONENTS = [
  'executor',
  'lock-server',
  'payment-resource',
  'rail-proxy',
  'rail-stub',
  'postgres',
  'etcd',
];

function reportHeader(tookSeconds: number): string[] {
  const envShown = [
    `BENCH_PAYOUTS=${PAYOUTS}`,
    `BENCH_BACKENDS=${BACKENDS.join(',')}`,
    `BENCH_CONFIGS=${CONFIGS.map((c) => `${c.executors}x${c.concurrency}x${c.accounts}`).join(',')}`,
    `BENCH_CLEARING_SHARDS=${CLEARING_SHARDS}`,
    `BENCH_LATENCY_PAYOUTS=${LATENCY_PAYOUTS}`,
    `BENCH_ROUNDS=${ROUNDS}`,
    ...(HISTORY_PAYOUTS > 0 ? [`BENCH_HISTORY_PAYOUTS=${HISTORY_PAYOUTS}`] : []),
    ...(BASE_DIST ? [`BENCH_BASE_DIST=${BASE_DIST}`] : []),
    ...(EXTRA_DISTS ? [`BENCH_EXTRA_DISTS=${EXTRA_DISTS}`] : []),
    ...(NODE_OPTIONS ? [`BENCH_NODE_OPTIONS='${NODE_OPTIONS}'`] : []),
    ...(TRACES_MEMORY ? [] : ['BENCH_TRACES_MEMORY=0']),
    ...(RAW ? [] : ['BENCH_RAW=0']),
  ].join(' ');
  return [
    '# End-to-end payout benchmark',
    '',
    `Machine: ${machineLine()}. Everything on this one machine: embedded PostgreSQL (fsync on, defaults), etcd 3.4 (one member), lock-server, payment-resource, rail-proxy, rail-stub and the executors, each its own Node process, LOG_LEVEL=warn.`,
    '',
    `Command: \`npm run build && ${envShown} node dist/bench/e2e/bench.js\` (took ${tookSeconds} s; every BENCH_ variable in effect is shown).`,
    '',
    `payment-resource runs with PAYMENT_CLEARING_SHARDS=${CLEARING_SHARDS}; every guard on: fenced claim/outcome/post at payment-resource, high-water + one-submission-per-payout at the proxy, intent row committed before the rail, SDK session heartbeating, checkStillHeld and lease check before each side effect. Per payout: L4 acquire, P2 claim (a P4 read only when the claim finds the payout in another state), P6 SUBMITTED, proxy submit (→ stub over a fresh connection), P6 ACKED, P3 post, L6 release; the other hops keep their connections alive; every SQL statement is a named prepared statement. After every run the bench checks INV-03 in paydb (every group sums to zero, every balance equals its ledger sum).`,
    '',
  ];
}

function throughputSection(results: RunResult[]): string[] {
  return [
    '## Throughput',
    '',
    '| backend | variant | round | executors × lanes | accounts | payouts POSTED | wall s | payouts/s | mean payout ms (acquire→release) | lock acquire+release share | contended attempts | fenced writes | duplicate submits | clearing accounts | load avg (1 min, max during run) | machine CPU busy (ours) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...results.map(
      (r) =>
        `| ${r.backend} | ${r.variant} | ${r.round} | ${r.executors} × ${r.concurrency} | ${r.accounts} | ${r.payouts} | ${f1(r.seconds)} | **${f1(r.perSecond)}** | ${f1(r.executeMeanMs)} | ${f1(r.lockShare * 100)} % | ${r.contended} | ${r.fencedOut} | ${r.duplicates} | ${r.clearingAccounts} | ${f1(r.loadAvgMax)} | ${f1(r.machineBusy * 100)} % (${f1(r.oursBusy * 100)} %) |`,
    ),
    '',
    'Wall time runs from inserting the payouts until the last one is POSTED (it includes the polling delay of 20 ms and the ramp-up).',
    '',
  ];
}

function stepsSection(results: RunResult[]): string[] {
  return [
    '## Where the time of one payout goes (mean ms per step, as the executor sees it)',
    '',
    `| backend / run | ${STEPS.join(' | ')} | lock-server acquire (server side) | release (server side) |`,
    `| --- | ${STEPS.map(() => '---').join(' | ')} | --- | --- |`,
    ...results.map(
      (r) =>
        `| ${r.backend} ${r.variant} #${r.round} ${r.executors}×${r.concurrency}×${r.accounts} | ${STEPS.map((st) => f2(r.steps[st])).join(' | ')} | ${f2(r.serverAcquireMeanMs)} | ${f2(r.serverReleaseMeanMs)} |`,
    ),
    '',
  ];
}

function cpuSection(results: RunResult[]): string[] {
  return [
    '## CPU per payout (ms of CPU time per POSTED payout, by process, from /proc)',
    '',
    `| backend / run | ${COMPONENTS.join(' | ')} | total | CPU-bound ceiling: ${os.cpus().length} × 1000 / total (payouts/s) |`,
    `| --- | ${COMPONENTS.map(() => '---').join(' | ')} | --- | --- |`,
    ...results.map((r) => {
      const total = COMPONENTS.reduce((a, c) => a + (r.cpuMsPerPayout[c] ?? 0), 0);
      return `| ${r.backend} ${r.variant} #${r.round} ${r.executors}×${r.concurrency}×${r.accounts} | ${COMPONENTS.map((c) => f2(r.cpuMsPerPayout[c] ?? NaN)).join(' | ')} | ${f2(total)} | ${f1((os.cpus().length * 1000) / total)} |`;
    }),
    '',
  ];
}

function latencySection(latency: Collected['latency']): string[] {
  if (!latency.length) return [];
  return [
    '## Latency of one payout (one executor, one lane, one account; the rest of the machine as it was)',
    '',
    `| backend | mean ms (acquire→release) | ${STEPS.join(' | ')} |`,
    `| --- | --- | ${STEPS.map(() => '---').join(' | ')} |`,
    ...latency.map(
      (l) =>
        `| ${l.backend} | **${f1(l.meanMs)}** | ${STEPS.map((st) => f2(l.steps[st])).join(' | ')} |`,
    ),
    '',
  ];
}

// instructions.ts imports the stack from here and runs its own main.
if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
