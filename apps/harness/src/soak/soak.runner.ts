import { TERMINAL_PAYOUT_STATES_SQL } from '@dlock/payout-contract';
import { performance } from 'node:perf_hooks';
import { INVARIANTS, type InvariantReport } from '../checkers/invariants.checker';
import { writeLockHistory, type LinearizabilityReport } from '../checkers/linearizability';
import { addPayouts, createFixture } from '../payout.fixture';
import { mulberry32 } from '@dlock/prng';
import type { PgServer } from '../infra/postgres.infra';
import { withPg } from '../infra/postgres.infra';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkLockHistory, checkSystem, startHarness, type Harness } from '../scenario.runner';
import type { Backend, DlockSystem } from '../dlock-system.infra';
import {
  faultReplica,
  inject,
  planFault,
  selectKinds,
  type FaultKind,
  type PlannedFault,
} from './soak.nemesis';
import type { SoakTimeline } from './timeline-svg.report';

export interface SoakOptions {
  seed: number;
  minutes: number;
  backend: Backend;
  pg: PgServer;
  workDir: string;
  executors?: number;
  accounts?: number;
  /** New payouts per second (spread over the accounts). */
  inflowPerSecond?: number;
  log?: (m: string) => void;
  /** Aborts the fault phase early (Ctrl-C): the run still heals, drains and checks. */
  signal?: AbortSignal;
  /** Where to save every lock-server call the recorders saw (JSON lines), if anywhere. */
  lockHistoryOut?: string;
  /** Lock-server replicas (default 3), executors bound to them round-robin. */
  replicas?: number;
  /** `all` (default: every kind this system can suffer) or a comma-separated list of kinds. */
  nemesis?: string;
}

/** One fault of the run's timeline; a failed one fails the run. */
export interface SoakFault {
  atMs: number;
  kind: FaultKind;
  what: string;
  durationMs: number;
  /** The lock-server replica it acted on, for the kinds that act on one (see `faultReplica`). */
  replica?: number;
  failed?: boolean;
}

/** One lock-server replica's share of the run. */
export interface ReplicaStats {
  replica: number;
  name: string;
  /** Grants its recorder saw. */
  grants: number;
  /** Calls answered 5xx, or never answered (the replica died, was cut or reset). */
  errors: number;
  starts: number;
}

export interface SoakResult {
  options: Omit<SoakOptions, 'pg' | 'log'>;
  startedAt: string;
  durationMs: number;
  drainMs: number;
  payoutsCreated: number;
  payoutsByState: Record<string, number>;
  faults: SoakFault[];
  faultsByKind: Record<string, number>;
  /** Faults per replica they acted on, by kind (`{ 0: { 'lock-net-reset': 2 } }`). */
  faultsByReplica: Record<number, Record<string, number>>;
  /** Faults that could not be applied or healed: each fails the run. */
  faultFailures: number;
  /** The kinds drawn from, and those left out with the reason. */
  nemesis: { kinds: FaultKind[]; leftOut: Array<{ kind: FaultKind; why: string }> };
  replicas: ReplicaStats[];
  safetyEvents: Record<string, number>;
  ambiguous: {
    total: number;
    resolvedPosted: number;
    resolvedFailed: number;
    abandoned: number;
    open: number;
  };
  invariants: InvariantReport;
  /** The whole run's lock-server history, judged by the linearizability checker. */
  linearizability: LinearizabilityReport;
  railTransfers: number;
  grants: number;
  /** What the report's timeline picture draws (./timeline-svg.report.ts). */
  timeline: SoakTimeline;
}

const SAFETY_EVENTS = [
  'fenced_out',
  'fenced_out:account',
  'fenced_out:rail',
  'fenced_out:ledger',
  'rail_ambiguous',
  'duplicate_rail_submission_attempted',
  'session_lost',
  'lock_revoked',
  'invalid_transition',
  'token_regression',
  'rail_double_payment',
  'posted_without_transfer',
  'paid_but_not_posted',
];

/** The system a soak runs on: every replica, partitions where they can run, the rail seeded. */
export function startSoakHarness(o: SoakOptions): Promise<Harness> {
  return startHarness({
    label: `soak${o.backend}`,
    backend: o.backend,
    etcdMembers: o.backend === 'etcd' ? 3 : undefined,
    lockReplicas: o.replicas ?? 3,
    // Partitions where a PacketFilter can run; elsewhere their kinds are left out, with the reason.
    partitions: true,
    pg: o.pg,
    workDir: o.workDir,
    seed: o.seed,
    scale: 'full',
    railSeed: o.seed,
    log: o.log,
  });
}

/**
 * The soak: payouts flow through N executors while a seeded schedule injects
 * one fault at a time (pauses, kills, restarts, rail timeouts, network
 * faults). The schedule, fault parameters, targets and payout amounts all come
 * from the seed; wall-clock interleaving of course does not. Afterwards the
 * system drains and the same checkers as the scenarios judge the whole run.
 */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const h = await startSoakHarness(o);
  try {
    return await soakOn(h, o);
  } finally {
    await h.stop();
  }
}

/**
 * The soak on a harness from `startSoakHarness` that nothing has used yet (its checks and
 * counts cover the whole system), left running for the caller to use further and stop.
 */
export async function soakOn(h: Harness, o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => undefined);
  const { sys } = h;
  const startedAt = new Date().toISOString();
  const fx = await createFixture(sys.paydbUrl, {
    prefix: 'soak',
    accounts: o.accounts ?? 8,
    payoutsPerAccount: 0,
    openingMinor: 1_000_000_000,
  });
  const nemesis = selectKinds(o.nemesis ?? 'all', sys, o.pg);
  for (const l of nemesis.leftOut) log(`nemesis leaves out ${l.kind}: ${l.why}`);
  const nExec = o.executors ?? 3;
  for (let i = 0; i < nExec; i++) await sys.startExecutor(`soak-w${i + 1}`);
  const { clock, ...phase } = await faultPhase(sys, o, nemesis.kinds, fx.accountIds, log);
  const drainMs = await healAndDrain(sys);
  await sys.stopExecutors();
  const timeline = await collectTimeline(sys, clock, phase);
  // The lock history first: it is saved and judged even if a later check fails.
  const linearizability = await checkHistory(sys, o.lockHistoryOut, log);
  await h.ctx.watch.trySample();
  const invariants = await checkSystem(sys, h.ctx.watch);
  const all = sys.eventCounts();
  return {
    options: {
      seed: o.seed,
      minutes: o.minutes,
      backend: o.backend,
      workDir: o.workDir,
      executors: nExec,
      accounts: fx.accountIds.length,
      inflowPerSecond: o.inflowPerSecond ?? 4,
      replicas: sys.lockReplicas.length,
      nemesis: o.nemesis ?? 'all',
    },
    startedAt,
    ...phase,
    ...faultSummary(phase.faults),
    nemesis,
    replicas: replicaStats(sys),
    drainMs,
    payoutsByState: invariants.facts.payoutsByState,
    safetyEvents: Object.fromEntries(SAFETY_EVENTS.map((e) => [e, all[e] ?? 0])),
    ambiguous: await ambiguousPayouts(sys.paydbUrl),
    invariants,
    linearizability,
    railTransfers: invariants.facts.railTransfers,
    grants: invariants.facts.grants,
    timeline: {
      ...timeline,
      violations: timelineViolations(phase.faults, invariants, linearizability),
    },
  };
}

/**
 * Payouts flow in (their own random stream: the fault schedule must not
 * depend on how many payouts the inflow drew) while the seeded schedule
 * injects one fault at a time, until the soak's minutes are over.
 */
async function faultPhase(
  sys: DlockSystem,
  o: SoakOptions,
  kinds: readonly FaultKind[],
  accountIds: readonly string[],
  log: (m: string) => void,
): Promise<Pick<SoakResult, 'faults' | 'payoutsCreated' | 'durationMs'> & { clock: PhaseClock }> {
  const inflowRandom = mulberry32(o.seed ^ 0x9e3779b9);
  const t0 = performance.now();
  const t0Wall = Date.now();
  const faults: SoakFault[] = [];
  let created = 0;
  const clock = { t0, endAt: t0 + o.minutes * 60_000 };
  o.signal?.addEventListener('abort', () => (clock.endAt = performance.now()));
  const inflow = async () => {
    const perSecond = o.inflowPerSecond ?? 4;
    while (performance.now() < clock.endAt) {
      const accounts = Array.from(
        { length: perSecond },
        () => accountIds[Math.floor(inflowRandom() * accountIds.length)],
      );
      try {
        created += (
          await addPayouts(sys.paydbUrl, accounts, 1, 100 + Math.floor(inflowRandom() * 10_000))
        ).length;
      } catch {
        /* paydb restarting: this second's payouts are skipped */
      }
      await sleep(1_000);
    }
  };
  const chaosRun = chaos(sys, o, kinds, clock, faults, log);
  await Promise.all([inflow(), chaosRun]);
  return {
    faults,
    payoutsCreated: created,
    durationMs: Math.round(performance.now() - t0),
    clock: { t0, t0Wall },
  };
}

/** The seeded schedule: one fault at a time, each healed before the next, into `faults`. */
async function chaos(
  sys: DlockSystem,
  o: SoakOptions,
  kinds: readonly FaultKind[],
  clock: { t0: number; endAt: number },
  faults: SoakFault[],
  log: (m: string) => void,
): Promise<void> {
  const random = mulberry32(o.seed);
  const state = { etcdKills: 0 };
  await sleep(3_000);
  while (kinds.length > 0 && performance.now() < clock.endAt - 5_000) {
    const planned = planFault(random, kinds);
    const f = await injectTimed(sys, o.pg, planned, state, clock.t0);
    if (f) {
      faults.push(f);
      const at = `soak +${(f.atMs / 1000).toFixed(0)}s`;
      if (f.failed) log(`${at} FAULT FAILED (${f.kind}): ${f.what}`);
      else log(`${at} ${f.what}`);
    }
    await sleep(2_000 + Math.floor(random() * 4_000));
  }
}

/** One fault with its start and length; null when it did not apply (a second etcd kill). */
async function injectTimed(
  sys: DlockSystem,
  pg: PgServer,
  planned: PlannedFault,
  state: { etcdKills: number },
  t0: number,
): Promise<SoakFault | null> {
  const start = performance.now();
  const atMs = Math.round(start - t0);
  const replica = faultReplica(planned, sys.lockReplicas.length);
  const base = { atMs, kind: planned.kind, ...(replica === undefined ? {} : { replica }) };
  try {
    const what = await inject(sys, pg, planned, state);
    const durationMs = Math.round(performance.now() - start);
    return what ? { ...base, what, durationMs } : null;
  } catch (err) {
    const durationMs = Math.round(performance.now() - start);
    return {
      ...base,
      what: `injection failed: ${(err as Error).message}`,
      durationMs,
      failed: true,
    };
  }
}

export function faultSummary(
  faults: readonly SoakFault[],
): Pick<SoakResult, 'faultsByKind' | 'faultsByReplica' | 'faultFailures'> {
  const faultsByKind: Record<string, number> = {};
  const faultsByReplica: Record<number, Record<string, number>> = {};
  for (const f of faults) {
    faultsByKind[f.kind] = (faultsByKind[f.kind] ?? 0) + 1;
    if (f.replica === undefined) continue;
    const byKind = (faultsByReplica[f.replica] ??= {});
    byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
  }
  return { faultsByKind, faultsByReplica, faultFailures: faults.filter((f) => f.failed).length };
}

/** When the fault phase started: performance.now() (recorders, logs) and wall clock (databases). */
interface PhaseClock {
  t0: number;
  t0Wall: number;
}

/**
 * The picture's counters, per second from the start of the fault phase to
 * the end of the drain: POSTED transitions (paydb's own timestamps, one
 * machine so one clock), grants per replica (each recorder) and fenced-out
 * writes (every process log).
 */
async function collectTimeline(
  sys: DlockSystem,
  clock: PhaseClock,
  phase: Pick<SoakResult, 'faults' | 'durationMs'>,
): Promise<Omit<SoakTimeline, 'violations'>> {
  const durationMs = Math.round(performance.now() - clock.t0);
  const seconds = Math.ceil(durationMs / 1_000);
  const perSecond = (times: readonly number[]) => {
    const out = new Array<number>(seconds).fill(0);
    for (const ms of times) {
      const s = Math.floor((ms - clock.t0) / 1_000);
      if (s >= 0 && s < seconds) out[s]++;
    }
    return out;
  };
  const posted = await withPg(sys.paydbUrl, (c) =>
    c.query<{ s: number; n: number }>(
      `SELECT floor((extract(epoch FROM created_at) * 1000 - $1) / 1000)::int AS s, count(*)::int AS n
         FROM payout_transition WHERE to_state = 'POSTED' GROUP BY 1`,
      [clock.t0Wall],
    ),
  );
  const postedPerSecond = new Array<number>(seconds).fill(0);
  for (const row of posted.rows) if (row.s >= 0 && row.s < seconds) postedPerSecond[row.s] = row.n;
  return {
    durationMs,
    faultPhaseMs: phase.durationMs,
    faults: phase.faults,
    postedPerSecond,
    grantsPerSecond: sys.lockReplicas.map((r) => ({
      name: r.server.name,
      perSecond: perSecond(r.recorder.grants.map((g) => g.grantedAt)),
    })),
    fencedAtMs: sys
      .allApps()
      .flatMap((p) => p.fencedAt.map((at) => Math.round(at - clock.t0)))
      .sort((a, b) => a - b),
  };
}

/** Failed faults at their time; invariant and linearizability violations carry none. */
function timelineViolations(
  faults: readonly SoakFault[],
  invariants: InvariantReport,
  lin: LinearizabilityReport,
): SoakTimeline['violations'] {
  return [
    ...faults.filter((f) => f.failed).map((f) => ({ atMs: f.atMs, label: `${f.kind}: ${f.what}` })),
    ...INVARIANTS.flatMap((id) =>
      invariants.violations[id].map((v) => ({ atMs: null, label: `${id}: ${v}` })),
    ),
    ...lin.violations.map((v) => ({ atMs: null, label: `not linearizable: ${v.partition}` })),
  ];
}

/** Grants and errors per replica, from its own recorder. */
export function replicaStats(sys: DlockSystem): ReplicaStats[] {
  return sys.lockReplicas.map((r) => ({
    replica: r.index,
    name: r.server.name,
    grants: r.recorder.grants.length,
    errors: r.recorder.calls.filter(
      (c) => c.outcome === 'lost' || (c.outcome === 'answered' && (c.status ?? 0) >= 500),
    ).length,
    starts: r.server.starts,
  }));
}

/** Heals every fault, makes sure every executor runs, and lets the backlog drain (up to 120 s). */
async function healAndDrain(sys: DlockSystem): Promise<number> {
  for (const r of sys.lockReplicas) r.net.setFault({ kind: 'none' });
  sys.railNet.setFault({ kind: 'none' });
  sys.net?.filter.heal();
  for (const r of sys.lockReplicas) if (!r.server.running()) await r.server.restart();
  for (const p of sys.executors.values()) if (!p.running()) await p.restart();
  const d0 = performance.now();
  const drainDeadline = d0 + 120_000;
  while (performance.now() < drainDeadline) {
    const open = await withPg(sys.paydbUrl, async (c) =>
      Number(
        (
          await c.query<{ n: string }>(
            `SELECT count(*)::text AS n FROM payout WHERE state NOT IN ${TERMINAL_PAYOUT_STATES_SQL}`,
          )
        ).rows[0].n,
      ),
    ).catch(() => -1);
    if (open === 0) break;
    await sleep(1_000);
  }
  return Math.round(performance.now() - d0);
}

/** The linearizability checker over the whole run's lock-server calls, saved first if asked. */
async function checkHistory(
  sys: DlockSystem,
  out: string | undefined,
  log: (m: string) => void,
): Promise<LinearizabilityReport> {
  const { calls } = sys.lockHistory();
  if (out) {
    await writeLockHistory(out, calls);
    log(`${calls.length} lock-server calls written to ${out}`);
  }
  log(`checking the linearizability of ${calls.length} lock-server calls (every replica)`);
  const report = await checkLockHistory(sys);
  log(`linearizability ${report.verdict}, checked in ${(report.durationMs / 1000).toFixed(1)} s`);
  return report;
}

/** Payouts that went through RAIL_AMBIGUOUS, by how they ended. */
async function ambiguousPayouts(paydbUrl: string): Promise<SoakResult['ambiguous']> {
  return withPg(paydbUrl, async (c) => {
    const r = await c.query<{ state: string; n: string }>(
      `SELECT p.state, count(*)::text AS n FROM payout p
        WHERE EXISTS (SELECT 1 FROM payout_transition t WHERE t.payout_id = p.payout_id AND t.to_state = 'RAIL_AMBIGUOUS')
        GROUP BY p.state`,
    );
    const by = Object.fromEntries(r.rows.map((x) => [x.state, Number(x.n)]));
    const total = r.rows.reduce((n, x) => n + Number(x.n), 0);
    return {
      total,
      resolvedPosted: by.POSTED ?? 0,
      resolvedFailed: by.FAILED ?? 0,
      abandoned: by.ABANDONED ?? 0,
      open: total - (by.POSTED ?? 0) - (by.FAILED ?? 0) - (by.ABANDONED ?? 0),
    };
  });
}

/**
 * Invariant violations, plus one per key or session whose history is not
 * linearizable, plus one per fault that could not be applied (a run that
 * did not suffer its faults proves nothing).
 */
export function soakViolations(r: SoakResult): number {
  const invariants = INVARIANTS.reduce((n, id) => n + r.invariants.violations[id].length, 0);
  return invariants + r.linearizability.violations.length + r.faultFailures;
}
