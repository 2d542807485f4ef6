#!/usr/bin/env node
// npm run bench:compare -- <ref>: this build against another commit, side by side, the way
// every change to a hot path is checked before it lands (README.md, "Benchmarks").
// Builds <ref> in a worktree under .tmp/, then runs, interleaved round by round on one
// machine: the lock-server bench (acquire+release pairs/s at concurrency 64, server CPU per
// pair) and the end-to-end payout bench (payouts/s and CPU per payout, pg and etcd), and
// prints this build's figures as ratios of <ref>'s. Reports go to .tmp/bench-compare/, never
// over the committed ones. Knobs: BENCH_ROUNDS (3), BENCH_DURATION_MS (8000),
// BENCH_PAYOUTS (1500), BENCH_BACKENDS (pg,etcd), BENCH_CONFIGS (1x16x64), BENCH_SETTLE_MAX_S
// (300: how long to wait for the previous bench's load to settle).
// BENCH_COMPARE_MODE=instructions runs instead the payout path under callgrind
// (bench/e2e/instructions.ts): instructions per payout by process, which neither the
// machine's load nor its drift between hours moves; BENCH_ROUNDS (2) and its own knobs.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const ref = process.argv[2];
if (!ref) {
  console.error('usage: npm run bench:compare -- <git ref>');
  process.exit(2);
}
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const sha = git('rev-parse', '--verify', `${ref}^{commit}`);
const out = path.join(root, '.tmp', 'bench-compare');
const base = path.join(root, '.tmp', `compare-${sha.slice(0, 12)}`);
mkdirSync(out, { recursive: true });

/** <ref> checked out and built once; kept for the next comparison against it. */
function buildBase() {
  if (!existsSync(base)) git('worktree', 'add', '--detach', base, sha);
  if (!existsSync(path.join(base, 'node_modules')))
    symlinkSync(path.join(root, 'node_modules'), path.join(base, 'node_modules'));
  if (!existsSync(path.join(base, 'dist', 'apps', 'lock-server', 'main.js'))) {
    console.log(`[compare] building ${ref} (${sha.slice(0, 12)}) in ${path.relative(root, base)}`);
    execFileSync(process.execPath, ['scripts/build.js'], { cwd: base, stdio: 'inherit' });
  }
}

/**
 * One bench's own load lingers in the 1-minute average: wait (bounded) for it to settle
 * below the gate's threshold before the next, rather than be refused by it (bench/load-gate.ts).
 */
function settle() {
  const max = Number(process.env.BENCH_LOAD_MAX ?? '1.5');
  const deadlineMs = Date.now() + Number(process.env.BENCH_SETTLE_MAX_S ?? '300') * 1000;
  while (os.loadavg()[0] > max && Date.now() < deadlineMs) {
    console.log(`[compare] load ${os.loadavg()[0].toFixed(2)} > ${max}: waiting for it to settle`);
    spawnSync('sleep', ['10']);
  }
}

function run(script, env, { quiet = true } = {}) {
  if (quiet) settle();
  const res = spawnSync(process.execPath, [path.join(root, 'dist', 'bench', ...script)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  process.stdout.write(res.stdout);
  if (res.status !== 0) {
    console.error(`[compare] ${script.join('/')} failed (exit ${res.status})`);
    process.exit(res.status ?? 1);
  }
  return res.stdout;
}

/** The lock-server: medians of pairs/s and server CPU per pair, base vs this build. */
function lockServer() {
  const text = run(['lock-server', 'auth-cost.js'], {
    BENCH_BASE_DIR: base,
    BENCH_BASE_AUTH: existsSync(path.join(base, 'libs', 'identity')) ? '1' : '0',
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '3',
  });
  const median = (side) => {
    const m = new RegExp(`median ${side}: (\\d+) pairs/s, ([\\d.]+) server cpu ms/pair`).exec(text);
    return m ? { pairs: Number(m[1]), cpuMs: Number(m[2]) } : null;
  };
  return { base: median('base'), head: median('identity') };
}

function e2e() {
  const report = path.join(out, 'e2e.md');
  run(['e2e', 'bench.js'], {
    BENCH_BASE_DIST: path.join(base, 'dist'),
    BENCH_TRACES_MEMORY: '0',
    BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '3',
    BENCH_PAYOUTS: process.env.BENCH_PAYOUTS ?? '1500',
    BENCH_CONFIGS: process.env.BENCH_CONFIGS ?? '1x16x64',
    BENCH_LATENCY_PAYOUTS: '0',
    BENCH_REPORT: path.relative(root, report),
  });
  return readFileSync(report, 'utf8')
    .split('\n')
    .filter(
      (l) => /^\| (pg|etcd) .* \| (base|traces off) \|/.test(l) || /^\| (raw|share) /.test(l),
    );
}

/** Instructions per payout, base and this build interleaved: the report's tables. */
function instructions() {
  const report = path.join(out, 'payout-instructions.md');
  run(
    ['e2e', 'instructions.js'],
    {
      BENCH_BASE_DIST: path.join(base, 'dist'),
      BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '2',
      BENCH_REPORT: path.relative(root, report),
    },
    { quiet: false },
  );
  console.log(
    `\n[compare] this build (${git('rev-parse', '--short', 'HEAD')}) against ${ref} (${sha.slice(0, 12)})`,
  );
  for (const line of readFileSync(report, 'utf8').split('\n')) {
    if (/^(\||## |Of which)/.test(line)) console.log(line);
  }
  console.log(`[compare] full report: ${path.relative(root, report)}`);
}

buildBase();
if (process.env.BENCH_COMPARE_MODE === 'instructions') {
  instructions();
  process.exit(0);
}
const lock = lockServer();
const rows = e2e();
const ratio = (a, b) => (a && b ? `${((a / b) * 100).toFixed(1)} %` : 'n/a');
console.log(
  `\n[compare] this build (${git('rev-parse', '--short', 'HEAD')}) against ${ref} (${sha.slice(0, 12)})`,
);
console.log(
  `[compare] lock-server pairs/s: ${lock.head?.pairs} vs ${lock.base?.pairs} = ${ratio(lock.head?.pairs, lock.base?.pairs)}; ` +
    `server CPU per pair: ${lock.head?.cpuMs} vs ${lock.base?.cpuMs} ms = ${ratio(lock.head?.cpuMs, lock.base?.cpuMs)}`,
);
console.log('[compare] end to end (change vs base in the last columns):');
for (const row of rows) console.log(row);
console.log(`[compare] full reports: ${path.relative(root, out)}/`);
