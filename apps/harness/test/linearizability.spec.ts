import { linearizabilityLine } from '../src/checkers/linearizability';
import {
  BROKEN_MODES,
  runLinearizabilityControls,
  type BrokenMode,
  type LinearizabilityControlResult,
} from '../src/linearizability-control';
import { runScenario, startHarness } from '../src/runner';
import { uc01 } from '../src/scenarios';
import type { Backend } from '../src/system';
import { log, removeWorkDir, TEST_SEED, testPg, testWorkDir } from './support';

/** What the checker must say about each broken lock-server (docs/harness.md, "Negative controls"). */
const EXPECTED_WHY: Record<BrokenMode, RegExp> = {
  'release-ignores-token': /released token \d+, but the key was (held by|free)/,
  'acquire-ignores-holder': /granted token \d+ while the key was held by/,
  'token-goes-back': /token \d+ is not above \d+/,
};

/**
 * The linearizability checker on real runs: UC-01 and the lock drill on a
 * real lock-server are accepted, and a lock-server restarted with a
 * LOCK_SERVER_BROKEN mode produces a history the checker rejects, naming the
 * calls that cannot be ordered.
 */
describe('harness linearizability checker on real lock-servers', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach(removeWorkDir));

  async function run(backend: Backend, modes: readonly BrokenMode[]) {
    const workDir = testWorkDir(`lin-${backend}`);
    dirs.push(workDir);
    const h = await startHarness({
      backend,
      etcdMembers: backend === 'etcd' ? 1 : undefined,
      pg: testPg(),
      workDir,
      seed: TEST_SEED,
      scale: 'short',
      reconciler: false,
      log,
    });
    try {
      const happy = await runScenario(h.ctx, uc01);
      log(linearizabilityLine(happy.linearizability));
      expect(happy.failures).toEqual([]);
      expect(linearizabilityLine(happy.linearizability)).toMatch(/^linearizability: ok/);
      // Not vacuous: the executor's session and its grants were judged.
      expect(happy.linearizability.keys).toBeGreaterThan(0);
      expect(happy.linearizability.ops).toBeGreaterThanOrEqual(5);
      return await runLinearizabilityControls(h.sys, { modes, log });
    } finally {
      await h.stop();
    }
  }

  function expectControls(results: LinearizabilityControlResult[], modes: readonly BrokenMode[]) {
    const [real, ...broken] = results;
    expect(real.mode).toBe('off');
    expect(real.deviations).toEqual([]);
    expect(linearizabilityLine(real.report)).toMatch(/^linearizability: ok/);
    expect(broken.map((r) => r.mode)).toEqual(modes);
    for (const r of broken) {
      if (r.mode === 'off') throw new Error('one run on the real lock-server only');
      const why = EXPECTED_WHY[r.mode];
      log(linearizabilityLine(r.report));
      expect({ mode: r.mode, verdict: r.report.verdict }).toEqual({
        mode: r.mode,
        verdict: 'violation',
      });
      const v = r.report.violations.find((x) => why.test(x.why ?? ''));
      expect(v).toBeDefined();
      // The explanation is the few calls that conflict, each printed.
      expect(v!.core.length).toBeGreaterThanOrEqual(2);
      expect(v!.core.length).toBeLessThanOrEqual(4);
      expect(v!.lines.slice(0, v!.core.length).every((l) => /^#\d+ \+/.test(l))).toBe(true);
    }
  }

  it('pg: UC-01 and the drill are accepted; every LOCK_SERVER_BROKEN mode is rejected', async () => {
    expectControls(await run('pg', BROKEN_MODES), BROKEN_MODES);
  }, 240_000);

  it('etcd: UC-01 and the drill are accepted; a grant that ignores its holder is rejected', async () => {
    const modes = ['acquire-ignores-holder'] as const;
    expectControls(await run('etcd', modes), modes);
  }, 240_000);
});
