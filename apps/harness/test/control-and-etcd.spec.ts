import { summarize } from '../src/checkers/invariants.checker';
import { linearizabilityLine } from '../src/checkers/linearizability';
import { runLinearizabilityControls } from '../src/linearizability-control.runner';
import {
  runNegativeControl,
  runScenario,
  startHarness,
  type Harness,
} from '../src/scenario.runner';
import { uc07 } from '../src/scenarios/scenarios.registry';
import { expectControls } from './linearizability-controls';
import { log, removeWorkDir, TEST_SEED, testPg, testWorkDir } from './support';

describe('harness negative control and etcd failover', () => {
  afterAll(() => {
    removeWorkDir(testWorkDir('control'));
    removeWorkDir(testWorkDir('etcd'));
  });

  it('the negative control (both fencing switches off) corrupts, and the checkers catch it', async () => {
    const control = await runNegativeControl({
      pg: testPg(),
      workDir: testWorkDir('control'),
      backend: 'pg',
      seed: TEST_SEED,
      log,
    });
    log(JSON.stringify(control.evidence));
    expect(control.failures).toEqual([]);
    expect(control.caughtBy).toEqual(expect.arrayContaining(['INV-02']));
    expect(control.detected).toBe(true);
  }, 120_000);

  describe('on a three-member etcd cluster', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness({
        backend: 'etcd',
        etcdMembers: 3,
        pg: testPg(),
        workDir: testWorkDir('etcd'),
        seed: TEST_SEED,
        scale: 'short',
        reconciler: false,
        log,
      });
    }, 120_000);
    afterAll(() => h?.stop());

    it('UC-07: leader killed, tokens keep increasing', async () => {
      const result = await runScenario(h.ctx, uc07);
      log(JSON.stringify(result.evidence));
      expect(result.failures).toEqual([]);
      expect(result.evidence.etcdLeader).toEqual({
        killed: expect.any(String),
        elected: expect.any(String),
      });
      expect(summarize(result.invariants)).toEqual([]);
      expect(linearizabilityLine(result.linearizability)).toMatch(/^linearizability: ok/);
    }, 150_000);

    // The linearizability controls on etcd, on the same cluster (no system of their own).
    it('the lock drill is accepted; a grant that ignores its holder is rejected', async () => {
      const modes = ['acquire-ignores-holder'] as const;
      expectControls(await runLinearizabilityControls(h.sys, { modes, log }), modes);
    }, 120_000);
  });
});
