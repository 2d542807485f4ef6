import { performance } from 'node:perf_hooks';
import { checkLockHistory, describeLinearizability } from './check';
import { simulateHistory, type SimulatedBug } from './simulated-history.testing';

/**
 * Property tests over simulated lock-servers (simulated-history.testing.ts):
 * every history of the correct one is accepted, whatever the interleaving,
 * pauses, lost answers and revocations; each broken rule is caught once it
 * has changed an answer.
 */
describe('linearizability checker on simulated lock-servers', () => {
  const base = { keys: 3, workers: 4, durationMs: 20_000, lostRate: 0.03, pauseRate: 0.05 };

  it.each(Array.from({ length: 12 }, (_, i) => i + 1))(
    'accepts the correct server, seed %i',
    async (seed) => {
      const { ops } = simulateHistory({ ...base, seed });
      const r = await checkLockHistory(ops);
      expect(describeLinearizability(r)[0]).toMatch(/^linearizability: ok/);
    },
  );

  it.each([1, 2, 3])(
    'accepts the correct server when one answer in five is lost, seed %i',
    async (seed) => {
      const { ops } = simulateHistory({
        ...base,
        seed,
        workers: 5,
        durationMs: 60_000,
        lostRate: 0.2,
      });
      expect(ops.filter((op) => op.returnAt === Infinity).length).toBeGreaterThan(150);
      const r = await checkLockHistory(ops);
      expect(describeLinearizability(r)[0]).toMatch(/^linearizability: ok/);
    },
  );

  it.each([
    ['release-ignores-token', /released token \d+, but the key was (held by|free)/],
    ['acquire-ignores-holder', /granted token \d+ while the key was held by/],
    ['token-goes-back', /is not above/],
  ] as Array<[SimulatedBug, RegExp]>)('rejects a server whose %s', async (bug, why) => {
    const { ops, bugFired } = simulateHistory({ ...base, seed: 3, bug });
    expect(bugFired).toBeGreaterThan(0);
    const r = await checkLockHistory(ops);
    expect(r.verdict).toBe('violation');
    expect(r.violations.some((v) => why.test(v.why ?? ''))).toBe(true);
    for (const v of r.violations) expect(v.core.length).toBeLessThanOrEqual(6);
  });

  it('checks a soak-sized history (10 minutes, 8 keys, 6 workers) well inside its budget', async () => {
    const { ops } = simulateHistory({
      seed: 42,
      keys: 8,
      workers: 6,
      durationMs: 600_000,
      lostRate: 0.005,
      pauseRate: 0.001,
    });
    const t0 = performance.now();
    const r = await checkLockHistory(ops);
    const seconds = (performance.now() - t0) / 1000;
    console.log(`${ops.length} calls checked in ${seconds.toFixed(1)} s`);
    expect(r.verdict).toBe('ok');
  }, 120_000);
});
