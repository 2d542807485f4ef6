/**
 * Instructions per payout, by process: the end-to-end payout path of bench:e2e
 * with every node process under callgrind (bench/callgrind.ts). CPU time per
 * payout moves with the machine's other load and with the host's speed, which
 * drifts by 2x between hours here (CONTRIBUTING.md, "Before a change lands"); the
 * instructions a payout executes do not, so this figure compares across
 * sittings, and two builds compare in a few minutes without a quiet machine.
 *
 *   npm run build && npm run bench:e2e:instructions   # bench/reports/payout-instructions.md
 *   BENCH_BASE_DIST=.tmp/compare-<sha>/dist ...        # another build beside this one
 *     (`BENCH_COMPARE_MODE=instructions npm run bench:compare -- <ref>` does that)
 *   knobs: BENCH_ROUNDS (2), BENCH_WARM_PAYOUTS (400), BENCH_PAYOUTS (200),
 *     BENCH_CONFIGS (1x2x8: executors x lanes x accounts; more lanes queue
 *     requests past the executor's fixed hop timeouts), BENCH_BACKENDS (pg),
 *     BENCH_REPORT (where the report goes), BENCH_KEEP_DUMPS=1 (keep the
 *     callgrind dumps, cg.<pid>.<n>, for callgrind_annotate)
 *
 * Each run starts a fresh stack of the variant, posts BENCH_WARM_PAYOUTS
 * uninstrumented (start-up and JIT warm-up stay out), then switches counting on
 * in every process, posts BENCH_PAYOUTS on fresh accounts and reads each
 * process's counter. PostgreSQL and etcd run natively: their share is the
 * statements, counted by bench:stack and bench:e2e's raw payout. Instructions
 * are not time (OpenSSL's Ed25519 runs many per cycle: bench/reports/stack-cost.md),
 * so a change is confirmed in CPU time with bench:compare's default mode.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { startEtcd, type EtcdCluster } from '../../libs/testing/src/etcd';
import { machineLine } from '../lock-server/etcd-common';
import type { Instructions } from '../callgrind';
import { notesOfFile } from '../report-notes';
import {
  TRACES_OFF,
  ledgerHolds,
  median,
  seed,
  startExecutors,
  startPostgres,
  startStack,
  untilPosted,
  type App,
  type Config,
  type Pg,
  type Variant,
} from './bench';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const REPORT = path.join(ROOT, process.env.BENCH_REPORT ?? 'bench/reports/payout-instructions.md');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WARM_PAYOUTS = Number(process.env.BENCH_WARM_PAYOUTS ?? 400);
const PAYOUTS = Number(process.env.BENCH_PAYOUTS ?? 200);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'pg').split(',') as ('pg' | 'etcd')[];
const [CONFIG] = (process.env.BENCH_CONFIGS ?? '1x2x8').split(',').map((c): Config => {
  const [executors, concurrency, accounts] = c.split('x').map(Number);
  if (![executors, concurrency, accounts].every((n) => Number.isInteger(n) && n > 0)) {
    throw new Error(`BENCH_CONFIGS: "${c}" is not executors x lanes x accounts`);
  }
  return { executors, concurrency, accounts };
});
/** Under callgrind a node process runs some 50 times slower: a posting pass gets this long. */
const POSTED_TIMEOUT_MS = 30 * 60_000;
/**
 * Deadlines that a process some 50 times slower must still meet, or an attempt takes another
 * path than a payout's (misses in the counted window are reported, and refused past
 * MISSES_MAX):
 * - the rail hops: the proxy's connect to a rail stub under callgrind takes far longer than
 *   its 1 s default (bench/stack/bench.ts found it), and so can the stub's answer. The
 *   executor's RAIL_READ_TIMEOUT_MS must equal the proxy's (docs/rail.md, "Deadlines");
 * - the lease and the session: the executor abandons a payout whose lease has too little left
 *   for the submit (docs/executor.md); 60 s is the longest a lock-server grants.
 * Not movable: the executor's hop timeouts (libs/http-client/src/hop-policy.ts: 3 s for a
 * fenced write, 1 s for an advisory read), which a major GC under callgrind (seconds) can
 * exceed.
 */
const SLOW_PEERS = {
  RAIL_CONNECT_TIMEOUT_MS: '8000',
  RAIL_READ_TIMEOUT_MS: '30000',
  LOCK_DEFAULT_TTL_MS: '60000',
  LOCK_SESSION_TTL_MS: '60000',
};
/** Attempts in the counted window that may end without posting: 3 % of its payouts. */
const MISSES_MAX = Math.floor((PAYOUTS * 3) / 100);
const PROCESSES = ['lock-server', 'payment-resource', 'rail-proxy', 'rail-stub', 'executor'];

/**
 * Work on timers (the executor's poll passes, session heartbeats, the lock-server's database
 * probe) is counted with the payouts and grows with the window's wall time, which callgrind
 * stretches some 50 times. The executor polls at its default (1 s), not bench:e2e's 20 ms,
 * which keeps that share small. (An idle window as long, subtracted, does not measure it:
 * V8 collects garbage when a process goes idle, so such a window counts more than the busy one.)
 */
const EXECUTOR_SETTINGS = { EXECUTOR_POLL_INTERVAL_MS: '1000' };

interface Counted {
  backend: string;
  variant: string;
  round: number;
  /** Instructions per payout by process, V8's compilers left out. */
  perPayout: Record<string, number>;
  /** V8's compilers' instructions per payout by process, in the same window. */
  jitPerPayout: Record<string, number>;
  /** Of perPayout, the garbage collector's share by process (it grows with what a process keeps). */
  gcPerPayout: Record<string, number>;
  /** Attempts in the counted window that did not post, by result (misses()). */
  missed: string[];
}

function variants(dir: string): Variant[] {
  const env = { ...TRACES_OFF.env, ...SLOW_PEERS };
  const base = process.env.BENCH_BASE_DIST;
  return [
    ...(base ? [{ name: 'base', dist: path.resolve(base), env, callgrindDir: dir }] : []),
    { name: 'this build', dist: TRACES_OFF.dist, env, callgrindDir: dir },
  ];
}

const accountsOf = (n: number) =>
  Array.from({ length: n }, (_, i) => `instr-${randomUUID().slice(0, 6)}-${i}`);

/** Posts `payouts` payouts on fresh accounts; throws unless every one of them was POSTED. */
async function post(paydb: string, payouts: number): Promise<void> {
  const accounts = accountsOf(CONFIG.accounts);
  const started = performance.now();
  await seed(paydb, accounts, payouts);
  const { states } = await untilPosted(paydb, accounts, payouts, started, POSTED_TIMEOUT_MS);
  if ((states.POSTED ?? 0) !== payouts) {
    throw new Error(`${payouts} payouts seeded, by state ${JSON.stringify(states)}`);
  }
}

/** One run: a fresh stack of `variant`, warmed uninstrumented, then counted over PAYOUTS. */
async function countRun(
  pg: Pg,
  backend: 'pg' | 'etcd',
  etcd: EtcdCluster | null,
  variant: Variant,
): Promise<Omit<Counted, 'round'>> {
  const s = await startStack(pg, backend, etcd, variant);
  let executors: App[] = [];
  try {
    executors = await startExecutors(
      s,
      CONFIG.executors,
      CONFIG.concurrency,
      'instr',
      variant,
      EXECUTOR_SETTINGS,
    );
    await post(s.paydb, WARM_PAYOUTS);
    const apps = [s.lockServer, s.payments, s.proxy, s.stub, ...executors];
    const warmMisses = await notPosted(executors);
    for (const a of apps) await a.counter!.instrument(true);
    const busy = await counted(apps, () => post(s.paydb, PAYOUTS));
    const perPayout: Record<string, number> = {};
    const jitPerPayout: Record<string, number> = {};
    const gcPerPayout: Record<string, number> = {};
    for (const [name, { total, jit, gc }] of busy) {
      perPayout[name] = (total - jit) / PAYOUTS;
      jitPerPayout[name] = jit / PAYOUTS;
      gcPerPayout[name] = gc / PAYOUTS;
    }
    if (!(await ledgerHolds(s.paydb))) throw new Error('INV-03 broken after the run');
    const missed = misses(warmMisses, await notPosted(executors));
    const line = PROCESSES.map((p) => `${p}=${kilo(perPayout[p])}`).join(' ');
    const note = missed.length ? `; attempts that did not post: ${missed.join(', ')}` : '';
    console.log(`[instructions] ${backend} [${variant.name}] per payout: ${line}${note}`);
    return { backend, variant: variant.name, perPayout, jitPerPayout, gcPerPayout, missed };
  } finally {
    await Promise.all(executors.map((e) => e.stop()));
    await s.stop();
  }
}

/** Instructions of each process (executors summed) while `work` runs. */
async function counted(apps: App[], work: () => Promise<void>): Promise<Map<string, Instructions>> {
  for (const a of apps) await a.counter!.zero();
  await work();
  const byName = new Map<string, Instructions>();
  for (const a of apps) {
    const { total, jit, gc } = await a.counter!.instructions();
    const sum = byName.get(a.name) ?? { total: 0, jit: 0, gc: 0 };
    byName.set(a.name, { total: sum.total + total, jit: sum.jit + jit, gc: sum.gc + gc });
  }
  return byName;
}

/** Attempts that did not post a payout, by result, summed over the executors. */
async function notPosted(executors: App[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const e of executors) {
    const text = await (await fetch(`${e.url}/metrics`)).text();
    for (const line of text.split('\n')) {
      const m = /^executor_payout_attempts_total\{result="([a-z_]+)"\} (\d+)$/.exec(line);
      if (m && m[1] !== 'posted') counts.set(m[1], (counts.get(m[1]) ?? 0) + Number(m[2]));
    }
  }
  return counts;
}

/**
 * Attempts of the counted window that did not post their payout, by result: each took another
 * path than a payout's (a timeout under callgrind), so past MISSES_MAX the count is refused.
 */
function misses(before: Map<string, number>, after: Map<string, number>): string[] {
  const other = [...after].filter(([k, n]) => n > (before.get(k) ?? 0));
  const list = other.map(([k, n]) => `${k} ${n - (before.get(k) ?? 0)}`);
  const total = other.reduce((sum, [k, n]) => sum + n - (before.get(k) ?? 0), 0);
  if (total > MISSES_MAX) {
    throw new Error(`${total} attempts in the counted window did not post: ${list.join(', ')}`);
  }
  return list;
}

const kilo = (n: number | undefined) =>
  n === undefined || !Number.isFinite(n) ? '–' : `${Math.round(n / 1000).toLocaleString('en')}k`;
const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

async function main(): Promise<void> {
  const t0 = Date.now();
  const tmp = path.join(ROOT, '.tmp', 'bench-instructions');
  mkdirSync(tmp, { recursive: true });
  const dir = mkdtempSync(path.join(tmp, 'cg-'));
  const pg = await startPostgres();
  const counted: Counted[] = [];
  try {
    for (const backend of BACKENDS) {
      const etcd =
        backend === 'etcd'
          ? await startEtcd({ label: 'bench-instr-etcd', heartbeatMs: 100, electionMs: 1_000 })
          : null;
      try {
        for (let round = 1; round <= ROUNDS; round++) {
          const vs = variants(dir);
          for (const v of round % 2 === 1 ? vs : vs.reverse()) {
            counted.push({ ...(await countRun(pg, backend, etcd, v)), round });
          }
        }
      } finally {
        await etcd?.stop();
      }
    }
  } finally {
    await pg.stop();
    // BENCH_KEEP_DUMPS=1 keeps the dumps for callgrind_annotate (bench/callgrind.ts).
    if (process.env.BENCH_KEEP_DUMPS === '1') console.log(`[instructions] dumps kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  const lines = report(counted, Math.round((Date.now() - t0) / 1000));
  writeFileSync(REPORT, `${[...lines, notesOfFile(REPORT)].join('\n')}\n`);
  console.log(`[instructions] wrote ${path.relative(ROOT, REPORT)}`);
}

function report(counted: Counted[], tookSeconds: number): string[] {
  const names = [...new Set(counted.map((c) => c.variant))];
  const lines = [
    '# Instructions per payout, by process',
    '',
    '- what: bench/e2e/instructions.ts (how it counts, and why, is at its top)',
    `- command: \`npm run build && ${commandLine()}npm run bench:e2e:instructions\` (${tookSeconds} s)`,
    `- machine: ${machineLine()}; instruction counts do not depend on its load`,
    `- per run: ${WARM_PAYOUTS} payouts uninstrumented, then ${PAYOUTS} counted; ${CONFIG.executors} executor × ${CONFIG.concurrency} lanes × ${CONFIG.accounts} accounts; ${ROUNDS} round(s), the variants interleaved (A B, B A)`,
    `- unit: thousands of instructions per POSTED payout, user space, V8's compilers left out (their own row), the garbage collector in (and shown apart), timers' work in (the executor polls every ${EXECUTOR_SETTINGS.EXECUTOR_POLL_INTERVAL_MS} ms); PostgreSQL and etcd not counted`,
    '',
  ];
  for (const backend of [...new Set(counted.map((c) => c.backend))]) {
    const of = (v: string) => counted.filter((c) => c.backend === backend && c.variant === v);
    const med = (v: string, f: (c: Counted) => number) => median(of(v).map(f));
    const header = () =>
      lines.push(
        `| process | ${names.join(' | ')} |${names.length > 1 ? ' change |' : ''}`,
        `| --- | ${names.map(() => '---:').join(' | ')} |${names.length > 1 ? ' ---: |' : ''}`,
      );
    lines.push(`## ${backend} lock backend (median of rounds; each round in brackets)`, '');
    header();
    const row = (label: string, f: (c: Counted) => number) => {
      const cells = names.map(
        (v) =>
          `${kilo(med(v, f))} (${of(v)
            .map((c) => kilo(f(c)))
            .join(', ')})`,
      );
      const [a, b] = [med(names[0], f), med(names[names.length - 1], f)];
      const change = names.length > 1 ? ` | ${(((b - a) / a) * 100).toFixed(1)} %` : '';
      lines.push(`| ${label} | ${cells.join(' | ')}${change} |`);
    };
    for (const p of PROCESSES) row(p, (c) => c.perPayout[p] ?? NaN);
    row('**all processes**', (c) => sum(c.perPayout));
    row("V8's compilers, all processes (left out above)", (c) => sum(c.jitPerPayout));
    lines.push(
      '',
      'Of which the garbage collector (scavenges, marking, sweeping, evacuation):',
      '',
    );
    header();
    for (const p of PROCESSES) row(p, (c) => c.gcPerPayout[p] ?? NaN);
    row('**all processes**', (c) => sum(c.gcPerPayout));
    lines.push('');
    const missed = counted.filter((c) => c.backend === backend && c.missed.length);
    for (const c of missed) {
      lines.push(
        `- ${c.variant}, round ${c.round}: attempts that did not post: ${c.missed.join(', ')}`,
      );
    }
    if (missed.length) lines.push('');
  }
  return lines;
}

/** A path under the repository as the repository names it (the report is read elsewhere). */
const shortPath = (value: string) =>
  path.isAbsolute(value) && value.startsWith(ROOT) ? path.relative(ROOT, value) : value;

function commandLine(): string {
  const knobs = [
    'BENCH_ROUNDS',
    'BENCH_WARM_PAYOUTS',
    'BENCH_PAYOUTS',
    'BENCH_CONFIGS',
    'BENCH_BACKENDS',
    'BENCH_BASE_DIST',
  ];
  return knobs
    .filter((k) => process.env[k] !== undefined)
    .map((k) => `${k}=${shortPath(process.env[k]!)} `)
    .join('');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
