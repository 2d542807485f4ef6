import type { GuardMode } from './guards.sim';
import type { NetworkFaults } from './network.sim';
import { runSeed, type BrokenVariant, type Fault } from './sim.runner';

/** Runs the shrinker may spend; each is one whole seed. */
const SHRINK_RUNS_MAX = 60;

/** A schedule: the scheduled faults and the message-fault rates. */
export interface Schedule {
  faults: Fault[];
  network: NetworkFaults;
}

const RATES = ['lossRate', 'duplicateRate', 'slowRate'] as const;

/**
 * Reduces a failing run's schedule to a short one that still fails (any
 * check): the faults by halves (keep the earlier or the later half), then one
 * at a time, then each message-fault rate set to zero; every removal after
 * which the seed still fails is kept. Bounded by SHRINK_RUNS_MAX runs.
 */
export async function shrinkSchedule(
  seed: number,
  start: Schedule,
  broken?: BrokenVariant,
  guards?: GuardMode,
): Promise<Schedule & { runs: number }> {
  let current: Schedule = { faults: [...start.faults], network: { ...start.network } };
  let runs = 0;
  const fails = async (candidate: Schedule): Promise<boolean> => {
    runs++;
    return (await runSeed({ seed, guards, broken, ...candidate })).failed;
  };
  while (current.faults.length > 1 && runs < SHRINK_RUNS_MAX) {
    const half = Math.ceil(current.faults.length / 2);
    const first = { ...current, faults: current.faults.slice(0, half) };
    const second = { ...current, faults: current.faults.slice(half) };
    if (await fails(first)) current = first;
    else if (await fails(second)) current = second;
    else break;
  }
  for (let i = current.faults.length - 1; i >= 0 && runs < SHRINK_RUNS_MAX; i--) {
    const without = { ...current, faults: current.faults.filter((_, j) => j !== i) };
    if (await fails(without)) current = without;
  }
  for (const rate of RATES) {
    if (current.network[rate] === 0 || runs >= SHRINK_RUNS_MAX) continue;
    const calmer = { ...current, network: { ...current.network, [rate]: 0 } };
    if (await fails(calmer)) current = calmer;
  }
  return { ...current, runs };
}
