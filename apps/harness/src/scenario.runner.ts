import { performance } from 'node:perf_hooks';
import { FenceWatch } from './checkers/fence-watch.checker';
import { checkInvariants, summarize, type InvariantReport } from './checkers/invariants.checker';
import { checkRecordedLockHistory, type LinearizabilityReport } from './checkers/linearizability';
import type { PgServer } from './infra/postgres.infra';
import { runPausedWorker } from './scenarios/uc03-paused-worker.scenario';
import type { Scale, Scenario, ScenarioContext, ScenarioResult } from './scenarios/scenario.types';
import { DlockSystem, type Backend, type SystemOptions } from './dlock-system.infra';

/**
 * The linearizability checker over every lock-server call the replicas'
 * recorders have seen so far, merged into one timeline (docs/harness.md,
 * "Linearizability", "Replicas").
 */
export function checkLockHistory(sys: DlockSystem): Promise<LinearizabilityReport> {
  return checkRecordedLockHistory(sys.lockHistory());
}

/** The invariant checkers over everything a system has recorded so far. */
export function checkSystem(sys: DlockSystem, watch: FenceWatch): Promise<InvariantReport> {
  const history = sys.lockHistory();
  return checkInvariants({
    paydbUrl: sys.paydbUrl,
    proxydbUrl: sys.proxydbUrl,
    railStubUrl: sys.railStub.url,
    grants: history.grants,
    revocations: history.revocations,
    fenceWatchViolations: watch.violations,
  });
}

export interface Harness {
  sys: DlockSystem;
  ctx: ScenarioContext;
  stop(): Promise<void>;
}

/** Starts a system and the context scenarios run in; the FenceWatch samples every `sampleMs`. */
export async function startHarness(
  o: Omit<SystemOptions, 'label'> & {
    label?: string;
    seed: number;
    scale: Scale;
    log?: (m: string) => void;
  },
): Promise<Harness> {
  const sys = await DlockSystem.start({ label: o.label ?? 'harness', ...o });
  const watch = new FenceWatch(sys.paydbUrl, sys.proxydbUrl);
  // One sample at a time; stop() waits for the one in flight.
  let inflight: Promise<void> | null = null;
  const timer = setInterval(() => {
    inflight ??= watch.trySample().finally(() => (inflight = null));
  }, 500);
  const ctx: ScenarioContext = {
    sys,
    watch,
    pg: o.pg,
    seed: o.seed,
    scale: o.scale,
    log: o.log ?? (() => undefined),
  };
  return {
    sys,
    ctx,
    async stop() {
      clearInterval(timer);
      await inflight;
      await sys.stop();
    },
  };
}

/** One scenario, then the checkers over the whole system; a failure in either fails it. */
export async function runScenario(
  ctx: ScenarioContext,
  scenario: Scenario,
): Promise<ScenarioResult> {
  const t0 = performance.now();
  await ctx.watch.trySample();
  let outcome;
  try {
    outcome = await scenario.run(ctx);
  } catch (err) {
    outcome = { evidence: {}, failures: [`scenario aborted: ${(err as Error).message}`] };
  }
  await ctx.watch.trySample();
  const invariants = await checkSystem(ctx.sys, ctx.watch);
  const linearizability = await checkLockHistory(ctx.sys);
  ctx.log(
    `${scenario.id}: ${outcome.failures.length} evidence failures, ${invariants.total} invariant violations, ` +
      `linearizability ${linearizability.verdict}`,
  );
  return {
    id: scenario.id,
    title: scenario.title,
    ...outcome,
    passed:
      outcome.failures.length === 0 &&
      invariants.total === 0 &&
      linearizability.verdict !== 'violation',
    invariants,
    linearizability,
    durationMs: Math.round(performance.now() - t0),
  };
}

export interface ControlResult {
  /** true when the corruption happened AND the checkers caught it. */
  detected: boolean;
  evidence: Record<string, unknown>;
  failures: string[];
  caughtBy: string[];
  invariants: InvariantReport;
}

/**
 * The negative control: UC-03 on a system with both fencing kill switches off
 * (DLOCK_HARNESS=1). It must corrupt (the rail pays twice) and the checkers
 * must say so; a clean control means the fault or the checks are broken.
 */
export async function runNegativeControl(o: {
  pg: PgServer;
  workDir: string;
  backend: Backend;
  seed: number;
  log?: (m: string) => void;
}): Promise<ControlResult> {
  const h = await startHarness({
    ...o,
    label: 'control',
    fencing: false,
    scale: 'short',
    reconciler: false,
  });
  try {
    let outcome;
    try {
      outcome = await runPausedWorker(h.ctx, false);
    } catch (err) {
      outcome = { evidence: {}, failures: [`control aborted: ${(err as Error).message}`] };
    }
    const invariants = await checkSystem(h.sys, h.ctx.watch);
    const caughtBy = Object.entries(invariants.violations)
      .filter(([, list]) => list.length > 0)
      .map(([id]) => id);
    const detected = outcome.failures.length === 0 && invariants.total > 0;
    return {
      detected,
      evidence: outcome.evidence,
      failures: outcome.failures,
      caughtBy,
      invariants,
    };
  } finally {
    await h.stop();
  }
}

export { summarize };
