import { summarize } from '../src/checkers/invariants.checker';
import { linearizabilityLine } from '../src/checkers/linearizability';
import { BROKEN_MODES, runLinearizabilityControls } from '../src/linearizability-control.runner';
import { runScenario, startHarness, type Harness } from '../src/scenario.runner';
import { SCENARIOS } from '../src/scenarios/scenarios.registry';
import { expectControls } from './linearizability-controls';
import { log, removeWorkDir, TEST_SEED, testPg, testWorkDir } from './support';

/**
 * The short, seeded version of UC-01..08 on ONE shared system (pg backend):
 * real processes, real databases, the same scenario and checker code the
 * `npm run harness` CLI runs. A scenario fails when the evidence of its fault
 * is missing, when any invariant checker reports a violation, or when the
 * lock-server history so far is not accepted as linearizable. Then, on the same
 * system, the linearizability checker's controls (the etcd run is in
 * control-and-etcd.spec.ts): a system of their own would only add a boot.
 */
describe('harness scenarios (pg backend)', () => {
  let h: Harness;
  const workDir = testWorkDir('scenarios');

  beforeAll(async () => {
    h = await startHarness({
      backend: 'pg',
      pg: testPg(),
      workDir,
      seed: TEST_SEED,
      scale: 'short',
      log,
    });
  }, 90_000);

  afterAll(async () => {
    await h?.stop();
    removeWorkDir(workDir);
  }, 30_000);

  it.each(SCENARIOS.map((s) => [s.id, s] as const))(
    '%s',
    async (_id, scenario) => {
      const result = await runScenario(h.ctx, scenario);
      log(JSON.stringify(result.evidence));
      expect({ id: result.id, failures: result.failures }).toEqual({
        id: scenario.id,
        failures: [],
      });
      expect(summarize(result.invariants)).toEqual([]);
      expect(linearizabilityLine(result.linearizability)).toMatch(/^linearizability: ok/);
    },
    120_000,
  );

  // Last: it restarts the lock-server broken, and the scenarios must not see that.
  it('linearizability controls: the drill is accepted; every LOCK_SERVER_BROKEN mode is rejected', async () => {
    expectControls(await runLinearizabilityControls(h.sys, { log }), BROKEN_MODES);
  }, 180_000);
});
