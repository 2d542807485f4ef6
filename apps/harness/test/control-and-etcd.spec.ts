import { summarize } from '../src/checkers/invariants';
import { linearizabilityLine } from '../src/checkers/linearizability';
import { runNegativeControl, runScenario, startHarness } from '../src/runner';
import { uc07 } from '../src/scenarios';
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

  it('UC-07 on a three-member etcd cluster: leader killed, tokens keep increasing', async () => {
    const h = await startHarness({
      backend: 'etcd',
      etcdMembers: 3,
      pg: testPg(),
      workDir: testWorkDir('etcd'),
      seed: TEST_SEED,
      scale: 'short',
      reconciler: false,
      log,
    });
    try {
      const result = await runScenario(h.ctx, uc07);
      log(JSON.stringify(result.evidence));
      expect(result.failures).toEqual([]);
      expect(result.evidence.etcdLeader).toEqual({
        killed: expect.any(String),
        elected: expect.any(String),
      });
      expect(summarize(result.invariants)).toEqual([]);
      expect(linearizabilityLine(result.linearizability)).toMatch(/^linearizability: ok/);
    } finally {
      await h.stop();
    }
  }, 150_000);
});
