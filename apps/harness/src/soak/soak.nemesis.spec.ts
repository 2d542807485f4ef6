import { mulberry32 } from '@dlock/prng';
import { faultReplica, leaderStallMs, planFault, type FaultKind } from './soak.nemesis';
import { faultSummary, type SoakFault } from './soak.runner';

/**
 * The older fault kinds act on the replica the seed draws (docs/harness.md,
 * "Soak"): pure, so a seed reproduces it, and one replica is always replica 0.
 */
describe('faults on any replica', () => {
  const replicaKinds: FaultKind[] = [
    'lock-server-restart',
    'lock-net-latency',
    'lock-net-reset',
    'lock-net-blackhole',
  ];

  function schedule(seed: number, replicas: number, n = 40): Array<number | undefined> {
    const random = mulberry32(seed);
    return Array.from({ length: n }, () => faultReplica(planFault(random, replicaKinds), replicas));
  }

  it('with three replicas a seeded schedule spreads the faults over more than one', () => {
    const chosen = schedule(31, 3);
    expect(chosen.every((r) => r !== undefined && r >= 0 && r < 3)).toBe(true);
    expect(new Set(chosen).size).toBeGreaterThan(1);
    // The same seed draws the same replicas.
    expect(schedule(31, 3)).toEqual(chosen);
  });

  it('with one replica every fault acts on replica 0, as before', () => {
    expect(new Set(schedule(31, 1))).toEqual(new Set([0]));
  });

  it('kinds that act on no replica record none', () => {
    const random = mulberry32(5);
    for (const kind of ['executor-kill', 'rail-timeouts', 'etcd-partition'] as const) {
      expect(faultReplica(planFault(random, [kind]), 3)).toBeUndefined();
    }
  });

  it('counts the recorded replica per kind', () => {
    const faults: SoakFault[] = [
      { atMs: 0, kind: 'lock-net-reset', what: '', durationMs: 1, replica: 2 },
      { atMs: 1, kind: 'lock-net-reset', what: '', durationMs: 1, replica: 2 },
      { atMs: 2, kind: 'lock-server-restart', what: '', durationMs: 1, replica: 0 },
      { atMs: 3, kind: 'executor-kill', what: '', durationMs: 1 },
    ];
    expect(faultSummary(faults).faultsByReplica).toEqual({
      0: { 'lock-server-restart': 1 },
      2: { 'lock-net-reset': 2 },
    });
  });
});

describe('an etcd leader stall', () => {
  it('stays below the session TTL by the margin, whatever the seed drew', () => {
    expect(leaderStallMs(4_000, 3_000)).toBe(2_000);
    expect(leaderStallMs(3_190, 3_000)).toBe(2_000);
    expect(leaderStallMs(1_500, 3_000)).toBe(1_500);
    expect(leaderStallMs(4_000, 10_000)).toBe(4_000);
  });
});
