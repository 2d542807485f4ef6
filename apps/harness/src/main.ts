import 'reflect-metadata';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { summarize } from './checkers/invariants.checker';
import {
  checkRecordedLockHistory,
  describeLinearizability,
  readLockHistory,
  writeLockHistory,
} from './checkers/linearizability';
import { startEmbeddedPg, type PgServer } from './infra/postgres.infra';
import { repoRoot } from './infra/repo.infra';
import { describeControl, runLinearizabilityControls } from './linearizability-control.runner';
import { runNegativeControl, runScenario, startHarness } from './scenario.runner';
import {
  SCENARIOS,
  scenarioById,
  type Scale,
  type Scenario,
  type ScenarioResult,
} from './scenarios/scenarios.registry';
import { soakReport } from './soak/soak.report';
import { parseNemesis } from './soak/soak.nemesis';
import { runSoak, soakViolations } from './soak/soak.runner';
import { timelineSvg } from './soak/timeline-svg.report';
import type { Backend } from './dlock-system.infra';

const USAGE = `usage: npm run harness -- <command> [options]
commands:
  uc01 .. uc08        one scenario (UC-01..UC-08)
  all                 every scenario on one system, then both negative controls
  control             the negative control only (UC-03 with both fencing switches off)
  lin-control         the linearizability checker's controls: a lock drill on the real
                      lock-server (accepted), then on each LOCK_SERVER_BROKEN mode (rejected)
  lin-check FILE      the linearizability checker over a history saved with --lock-history
  soak                payouts under a seeded fault schedule, then the checkers
options:
  --seed N            seed of every random choice (default 1)
  --backend pg|etcd   lock backend (default pg; etcd runs a three-member cluster)
  --scale short|full  scenario size (default full)
  --minutes M         soak length (default 10)
  --out FILE          soak report path (default bench/reports/soak-<backend>.md)
  --lock-history FILE save every lock-server call the recorders saw (JSON lines; scenarios, soak)
  --replicas N        lock-server replicas, executors bound round-robin (default 3 for the
                      soak, 1 for scenarios)
  --nemesis KINDS     soak fault kinds: all (default: every kind this system can suffer; the
                      rest are listed with the reason) or a comma-separated list, e.g.
                      lock-replica-kill,lock-replica-partition,etcd-partition,clock-skew
exit status: 0 when every check passed, 1 when any failed, 2 on bad usage.`;

class UsageError extends Error {}

function intArg(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw))
    throw new UsageError(`--${name} must be a non-negative integer, got "${raw}"`);
  return Number(raw);
}

const log = (m: string) => console.error(`[harness] ${m}`);

/** Ctrl-C: the soak ends its fault phase and still reports; scenarios stop their processes. */
const interrupt = new AbortController();
const stopOnInterrupt = new Set<() => Promise<void>>();

function printResult(r: ScenarioResult): void {
  const verdict = r.passed ? 'PASS' : 'FAIL';
  console.log(`\n== ${r.id} ${verdict} (${(r.durationMs / 1000).toFixed(1)} s): ${r.title}`);
  console.log(`evidence: ${JSON.stringify(r.evidence, null, 2)}`);
  for (const f of r.failures) console.log(`  evidence missing: ${f}`);
  for (const v of summarize(r.invariants)) console.log(`  violation ${v}`);
  console.log(
    `invariants: ${r.invariants.total} violations; payouts ${JSON.stringify(r.invariants.facts.payoutsByState)}`,
  );
  for (const line of describeLinearizability(r.linearizability)) console.log(line);
}

async function runScenarios(
  scenarios: readonly Scenario[],
  o: {
    pg: PgServer;
    workDir: string;
    backend: Backend;
    seed: number;
    scale: Scale;
    control: boolean;
    lockHistory?: string;
    replicas?: number;
  },
): Promise<boolean> {
  let ok = true;
  const h = await startHarness({
    ...o,
    etcdMembers: o.backend === 'etcd' ? 3 : undefined,
    lockReplicas: o.replicas ?? 1,
    log,
  });
  stopOnInterrupt.add(h.stop);
  try {
    for (const s of scenarios) {
      if (interrupt.signal.aborted) return false;
      log(`running ${s.id}: ${s.title}`);
      const r = await runScenario(h.ctx, s);
      printResult(r);
      ok &&= r.passed;
    }
    if (o.lockHistory) await saveLockHistory(o.lockHistory, h.sys.lockHistory().calls);
  } finally {
    stopOnInterrupt.delete(h.stop);
    await h.stop();
  }
  if (o.control && !interrupt.signal.aborted) ok = (await negativeControl(o)) && ok;
  if (o.control && !interrupt.signal.aborted) ok = (await linearizabilityControls(o)) && ok;
  return ok;
}

async function saveLockHistory(file: string, calls: Parameters<typeof writeLockHistory>[1]) {
  await writeLockHistory(file, calls);
  log(`${calls.length} lock-server calls written to ${file}`);
}

/** `lin-check FILE`: the checker over a saved history; 0 when it is accepted. */
async function linCheck(file: string): Promise<number> {
  const calls = await readLockHistory(file);
  log(`checking ${calls.length} lock-server calls from ${file}`);
  const report = await checkRecordedLockHistory({ calls, callsDropped: 0 });
  for (const line of describeLinearizability(report)) console.log(line);
  return report.verdict === 'ok' ? 0 : 1;
}

/** The checker's controls on a system of their own (no executors, no reconciler). */
async function linearizabilityControls(o: {
  pg: PgServer;
  workDir: string;
  backend: Backend;
  seed: number;
}) {
  log('running the linearizability controls (LOCK_SERVER_BROKEN=...)');
  const h = await startHarness({
    ...o,
    label: 'lincontrol',
    scale: 'short',
    reconciler: false,
    etcdMembers: o.backend === 'etcd' ? 1 : undefined,
    log,
  });
  stopOnInterrupt.add(h.stop);
  try {
    const results = await runLinearizabilityControls(h.sys, { log });
    for (const r of results) console.log(`\n${describeControl(r).join('\n')}`);
    return results.every((r) => r.passed);
  } finally {
    stopOnInterrupt.delete(h.stop);
    await h.stop();
  }
}

async function negativeControl(o: {
  pg: PgServer;
  workDir: string;
  backend: Backend;
  seed: number;
}) {
  log(
    'running the negative control (PAYMENT_FENCING_ENABLED=false, RAIL_PROXY_FENCING_ENABLED=false)',
  );
  const c = await runNegativeControl({ ...o, log });
  console.log(`\n== negative control: ${c.detected ? 'detected' : 'NOT DETECTED (FAIL)'}`);
  console.log(`evidence: ${JSON.stringify(c.evidence, null, 2)}`);
  for (const f of c.failures) console.log(`  control did not corrupt as expected: ${f}`);
  console.log(`caught by: ${c.caughtBy.join(', ') || 'nothing'}`);
  for (const v of summarize(c.invariants)) console.log(`  ${v}`);
  return c.detected;
}

/** `soak`: the run, its report printed and written; 0 when nothing was violated. */
async function soak(o: {
  pg: PgServer;
  workDir: string;
  backend: Backend;
  seed: number;
  minutes: number;
  lockHistory?: string;
  out?: string;
  replicas?: number;
  nemesis?: string;
}): Promise<number> {
  const result = await runSoak({
    ...o,
    log,
    signal: interrupt.signal,
    lockHistoryOut: o.lockHistory,
  });
  const out = o.out ?? path.join(repoRoot(), 'bench', 'reports', `soak-${o.backend}.md`);
  // The picture sits beside the report, which links it by name.
  const svg = `${out.replace(/\.md$/, '')}.svg`;
  const report = soakReport(result, '', path.basename(svg));
  console.log(report);
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, report);
  writeFileSync(svg, timelineSvg(result.timeline));
  log(`report written to ${out}, its timeline to ${svg}`);
  return soakViolations(result) === 0 ? 0 : 1;
}

/** `--replicas` (at least 1) and `--nemesis` (known kinds), checked before anything starts. */
function replicaArgs(
  rawReplicas: string | undefined,
  nemesis: string | undefined,
): { replicas?: number; nemesis?: string } {
  const replicas = rawReplicas === undefined ? undefined : intArg('replicas', rawReplicas, 1);
  if (replicas === 0) throw new UsageError('--replicas must be at least 1');
  if (nemesis !== undefined) {
    try {
      parseNemesis(nemesis);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  return { replicas, nemesis };
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      seed: { type: 'string' },
      backend: { type: 'string' },
      scale: { type: 'string' },
      minutes: { type: 'string' },
      out: { type: 'string' },
      'lock-history': { type: 'string' },
      replicas: { type: 'string' },
      nemesis: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const [command, file] = positionals;
  if (command === 'lin-check') {
    if (!file || positionals.length > 2) throw new UsageError('lin-check needs one FILE');
    return linCheck(file);
  }
  if (!command || positionals.length > 1) throw new UsageError('exactly one command is required');
  const seed = intArg('seed', values.seed, 1);
  const backend = (values.backend ?? 'pg') as Backend;
  if (backend !== 'pg' && backend !== 'etcd') throw new UsageError('--backend must be pg or etcd');
  const scale = (values.scale ?? 'full') as Scale;
  if (scale !== 'short' && scale !== 'full') throw new UsageError('--scale must be short or full');
  const minutes = intArg('minutes', values.minutes, 10);
  const scenario = scenarioById(command);
  const known = ['all', 'control', 'negative-control', 'lin-control', 'soak'];
  const lockHistory = values['lock-history'];
  const { replicas, nemesis } = replicaArgs(values.replicas, values.nemesis);
  if (!scenario && !known.includes(command)) throw new UsageError(`unknown command "${command}"`);

  const workDir = path.join(repoRoot(), '.tmp', `harness-cli-${process.pid}`);
  mkdirSync(workDir, { recursive: true });
  const pg = await startEmbeddedPg(workDir);
  const cleanup = async () => {
    await pg.stop();
    rmSync(workDir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => {
    if (interrupt.signal.aborted) return;
    log('interrupted: stopping (the soak still heals, drains and reports)');
    interrupt.abort();
    for (const stop of stopOnInterrupt) void stop();
  });
  try {
    const base = { pg, workDir, backend, seed, scale };
    if (command === 'soak') {
      return await soak({ ...base, minutes, lockHistory, out: values.out, replicas, nemesis });
    }
    if (command === 'control' || command === 'negative-control') {
      return (await negativeControl(base)) ? 0 : 1;
    }
    if (command === 'lin-control') return (await linearizabilityControls(base)) ? 0 : 1;
    const list = scenario ? [scenario] : SCENARIOS;
    const o = { ...base, control: command === 'all', lockHistory, replicas };
    return (await runScenarios(list, o)) ? 0 : 1;
  } finally {
    await cleanup();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      console.error(`harness: ${(err as Error).message}\n${USAGE}`);
      process.exit(2);
    }
    console.error('harness: failed:', err);
    process.exit(1);
  },
);
