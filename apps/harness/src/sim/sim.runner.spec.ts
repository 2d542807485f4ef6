import { runSeed, type BrokenVariant, type SimResult } from './sim.runner';
import { shrinkSchedule } from './schedule-shrink.checker';
import type { SimCheck } from './sim.checker';

describe('deterministic simulation (docs/harness.md, "Deterministic simulation")', () => {
  it('replays a seed bit for bit: the same seed gives the same history hash', async () => {
    const [a, b, other] = [
      await runSeed({ seed: 3 }),
      await runSeed({ seed: 3 }),
      await runSeed({ seed: 4 }),
    ];
    expect(a.historyHash).toBe(b.historyHash);
    expect(a.events).toBe(b.events);
    expect(other.historyHash).not.toBe(a.historyHash);
  });

  it('reads no wall clock, timer or unseeded randomness that could change a history', async () => {
    const plain = await runSeed({ seed: 5 });
    const realNow = Date.now.bind(Date);
    const random = jest.spyOn(Math, 'random');
    const timeout = jest.spyOn(global, 'setTimeout');
    // A wall clock a year ahead: a run that consulted it would come out different.
    const now = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 365 * 86_400_000);
    try {
      const shifted = await runSeed({ seed: 5 });
      expect(shifted.historyHash).toBe(plain.historyHash);
      expect(random).not.toHaveBeenCalled();
      expect(timeout).not.toHaveBeenCalled();
    } finally {
      now.mockRestore();
      random.mockRestore();
      timeout.mockRestore();
    }
  });

  /**
   * What the search finds in the real code and is not fixed yet, by seed within the budget
   * below (docs/harness.md, "Findings"). Empty: the one finding so far, a lock-client FR-11 gap
   * (a re-acquire on the same session while a release was in flight got the old grant back),
   * is fixed in the SDK (docs/lock-client.md, "Acquiring a key again on the same session"). A
   * budget seed that starts to fail is a new finding: record it here with its check until it is
   * fixed, so it never hides another check's.
   */
  const KNOWN_FINDINGS: Record<number, SimCheck[]> = {};

  it('finds nothing wrong over a fixed budget of seeds, beyond the known findings', async () => {
    let posted = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const r = await runSeed({ seed });
      expect({ seed, checks: Object.keys(r.violations) }).toEqual({
        seed,
        checks: KNOWN_FINDINGS[seed] ?? [],
      });
      posted += r.payoutsPosted;
    }
    // The workload does pay out under faults: a run that settles nothing would check nothing.
    expect(posted).toBeGreaterThan(100);
  });

  // Each deliberately broken variant, the check that must catch it, and within how many seeds.
  it.each<[BrokenVariant, SimCheck, number]>([
    ['guard-skips-fence', 'INV-01', 25],
    ['store-grants-twice', 'INV-06', 5],
    ['store-releases-any-token', 'INV-06', 5],
    ['store-tokens-go-back', 'INV-04', 5],
    ['sdk-trusts-expired-lease', 'LEASE', 20],
    ['executor-retries-rail-timeout', 'NO-RESUBMIT', 5],
  ])('negative control %s is caught by %s within %d seeds', async (broken, check, seedsMax) => {
    let caughtAt: number | undefined;
    for (let seed = 1; seed <= seedsMax && caughtAt === undefined; seed++) {
      // A seed the real code already fails with this check proves nothing about the control.
      if (KNOWN_FINDINGS[seed]?.includes(check)) continue;
      const r = await runSeed({ seed, broken });
      if ((r.violations[check]?.length ?? 0) > 0) caughtAt = seed;
    }
    expect(caughtAt).toBeDefined();
  });

  it('shrinks a failing schedule to a shorter one that still fails, and replays it exactly', async () => {
    // A failing seed with several faults, so there is something to shrink.
    let failed: SimResult | undefined;
    for (let seed = 1; seed <= 60 && !failed; seed++) {
      const r = await runSeed({ seed, broken: 'sdk-trusts-expired-lease' });
      if (r.failed && r.faults.length >= 3) failed = r;
    }
    expect(failed).toBeDefined();
    const shrunk = await shrinkSchedule(failed!.seed, failed!, 'sdk-trusts-expired-lease');
    expect(shrunk.faults.length).toBeLessThan(failed!.faults.length);
    const options = { seed: failed!.seed, broken: 'sdk-trusts-expired-lease' as const, ...shrunk };
    const [once, again] = [await runSeed(options), await runSeed(options)];
    expect(once.failed).toBe(true);
    expect(once.violations.LEASE?.length).toBeGreaterThan(0);
    expect(again.historyHash).toBe(once.historyHash);
  });
});
