import { runSeed, type BrokenVariant, type SimResult } from './run';
import { shrinkSchedule } from './shrink';
import type { SimCheck } from './checks';

/** The first failing seed in 1..seedsMax, or undefined. */
async function firstFailure(
  broken: BrokenVariant,
  seedsMax: number,
): Promise<SimResult | undefined> {
  for (let seed = 1; seed <= seedsMax; seed++) {
    const r = await runSeed({ seed, broken });
    if (r.failed) return r;
  }
  return undefined;
}

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

  it('finds nothing wrong with the real code over a fixed budget of seeds', async () => {
    let posted = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const r = await runSeed({ seed });
      expect({ seed, violations: r.violations }).toEqual({ seed, violations: {} });
      posted += r.payoutsPosted;
    }
    // The workload does pay out under faults: a run that settles nothing would check nothing.
    expect(posted).toBeGreaterThan(50);
  });

  // Each deliberately broken variant, the check that must catch it, and within how many seeds.
  it.each<[BrokenVariant, SimCheck, number]>([
    ['guard-skips-fence', 'INV-01', 20],
    ['store-grants-twice', 'INV-06', 5],
    ['sdk-trusts-expired-lease', 'LEASE', 20],
    ['executor-retries-rail-timeout', 'NO-RESUBMIT', 5],
  ])('negative control %s is caught by %s within %d seeds', async (broken, check, seedsMax) => {
    const failed = await firstFailure(broken, seedsMax);
    expect(failed?.violations[check]?.length).toBeGreaterThan(0);
  });

  it('shrinks a failing schedule to a shorter one that still fails, and replays it exactly', async () => {
    const failed = await firstFailure('sdk-trusts-expired-lease', 20);
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
