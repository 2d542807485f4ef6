import { BROKEN_MODES, runLinearizabilityControls } from '../src/linearizability-control';
import { startHarness } from '../src/runner';
import { expectControls } from './linearizability-controls';
import { log, removeWorkDir, TEST_SEED, testPg, testWorkDir } from './support';

/**
 * The linearizability checker on a real lock-server (pg backend; the etcd
 * backend's run is in control-and-etcd.spec.ts, on the UC-07 cluster). Every
 * scenario's history is also checked in scenarios.spec.ts.
 */
describe('harness linearizability checker on a real lock-server', () => {
  const workDir = testWorkDir('lin-pg');
  afterAll(() => removeWorkDir(workDir));

  it('pg: the drill is accepted; every LOCK_SERVER_BROKEN mode is rejected', async () => {
    const h = await startHarness({
      backend: 'pg',
      pg: testPg(),
      workDir,
      seed: TEST_SEED,
      scale: 'short',
      reconciler: false,
      log,
    });
    try {
      expectControls(await runLinearizabilityControls(h.sys, { log }), BROKEN_MODES);
    } finally {
      await h.stop();
    }
  }, 180_000);
});
