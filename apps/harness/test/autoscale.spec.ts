import { drainBudgetMs } from '../../executor/src/execution/domain/lease.rules';
import { summarize } from '../src/checkers/invariants.checker';
import { linearizabilityLine } from '../src/checkers/linearizability';
import { runScenario, startHarness, type Harness } from '../src/scenario.runner';
import { autoscaleScenario } from '../src/scenarios/autoscale.scenario';
import { FAST_TIMING } from '../src/dlock-system.infra';
import { log, removeWorkDir, testPg, testWorkDir, TEST_SEED } from './support';

/**
 * Goal: scaling proven, not assumed (docs/harness.md, "Autoscaling"). The executors go
 * 2 → 6 → 1 while payouts keep arriving, as the HorizontalPodAutoscaler of
 * k8s/base/executor-autoscaling.yaml would take them; the scale-in SIGTERMs five workers
 * with payouts at the rail (the stub answers after 200 ms) and gives them the grace the
 * pod has: every invariant checker clean, nothing RAIL_AMBIGUOUS.
 */
/**
 * The rail answers in 200 ms; a read timeout of 1 s (FAST_TIMING) is a real rail timeout on a
 * loaded machine, a RAIL_AMBIGUOUS no scale-in caused. 3 s keeps the scale the only variable;
 * the lease still covers a worst-case submit (lockTtl × 0.7 = 8.4 s ≥ 1 s + read timeout + 2 s),
 * with 2.4 s left for the acquire, the claim and RAIL_SUBMITTED on a loaded machine.
 */
const TIMING = { ...FAST_TIMING, railReadTimeoutMs: 3_000, lockTtlMs: 12_000 };

describe('executors autoscaled under load', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      backend: 'pg',
      pg: testPg(),
      workDir: testWorkDir('autoscale'),
      seed: TEST_SEED,
      scale: 'short',
      railLatencyMs: 200,
      timing: TIMING,
      // Not needed to judge a scale: one process less to boot on a shared machine.
      reconciler: false,
      log,
    });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    removeWorkDir(testWorkDir('autoscale'));
  });

  it('2 → 6 → 1 with SIGTERM on scale-in: every payout POSTED once, every checker clean', async () => {
    const scenario = autoscaleScenario({
      // The executor's own rule for its grace, at the harness's rail timeout.
      shutdownGraceMs: drainBudgetMs(TIMING.railReadTimeoutMs),
    });
    const r = await runScenario(h.ctx, scenario);
    log(JSON.stringify(r.evidence, null, 2));
    expect(r.failures).toEqual([]);
    expect(summarize(r.invariants)).toEqual([]);
    expect(r.invariants.facts.payoutsByState.RAIL_AMBIGUOUS ?? 0).toBe(0);
    expect(linearizabilityLine(r.linearizability)).toMatch(/^linearizability: ok/);
    expect(r.passed).toBe(true);
  }, 150_000);
});
