import { isTerminalPayoutState } from '@dlock/payout-contract';
import { createHash } from 'node:crypto';
import { mulberry32 } from '@dlock/prng';
import type { BrokenMode } from '../../../lock-server/src/locks/persistence/broken-lock.store';
import { useRowIdSource } from '@dlock/persistence';
import { checkRun, type GuardRecords, type Violations } from './sim.checker';
import { openGuards, type GuardMode, type SimGuards } from './guards.sim';
import { LockServerNode } from './lock-server-node.sim';
import { SimNetwork, type NetworkFaults } from './network.sim';
import { RailJournal, type SimPayout } from './payout-world.model';
import { SIM_EPOCH_MS, SimProcess, SimScheduler } from './scheduler.sim';
import { SimWorker, type World, type WorkerFaults } from './worker.sim';

/** One scheduled fault of a run: what the shrinker removes one by one. */
export interface Fault {
  atMs: number;
  kind: 'pause' | 'crash' | 'partition';
  worker: number;
  forMs: number;
}

/** The deliberately broken variants (docs/harness.md, "Negative controls"). */
export const BROKEN_VARIANTS = [
  'guard-skips-fence',
  'store-grants-twice',
  'store-releases-any-token',
  'store-tokens-go-back',
  'sdk-trusts-expired-lease',
  'executor-retries-rail-timeout',
] as const;
export type BrokenVariant = (typeof BROKEN_VARIANTS)[number];

/** The variants that break the lock-server's store, and the BrokenLockStore mode of each. */
const STORE_BREAKS: Partial<Record<BrokenVariant, BrokenMode>> = {
  'store-grants-twice': 'acquire-ignores-holder',
  'store-releases-any-token': 'release-ignores-token',
  'store-tokens-go-back': 'token-goes-back',
};

export interface SimOptions {
  seed: number;
  /** The in-memory model of the guards (default, fast) or their real services on PGlite. */
  guards?: GuardMode;
  broken?: BrokenVariant;
  /** Replaces the fault schedule the seed draws (a replay of a shrunk schedule). */
  faults?: Fault[];
  /** Replaces the message faults the seed draws. */
  network?: NetworkFaults;
}

export interface SimResult {
  seed: number;
  faults: Fault[];
  network: NetworkFaults;
  violations: Violations;
  failed: boolean;
  /** sha256 of everything observable: the server's calls, both guards' logs, the rail's journal. */
  historyHash: string;
  virtualMs: number;
  events: number;
  payoutsPosted: number;
  payoutsSettled: number;
  /** SQL statements the guards' databases ran. */
  statements: number;
}

const WORKERS = 4;
const ACCOUNTS = 2;
const PAYOUTS_PER_ACCOUNT = 6;
const RUN_VIRTUAL_MS = 60_000;
const EVENTS_MAX = 200_000;

/** The schedule a seed draws: its own PRNG stream, so a replay with a given schedule is exact. */
export function drawSchedule(seed: number): { faults: Fault[]; network: NetworkFaults } {
  const r = mulberry32(seed ^ 0x5eed);
  const faults: Fault[] = [];
  const n = Math.floor(r() * 13);
  for (let i = 0; i < n; i++) {
    const kind = (['pause', 'pause', 'crash', 'partition'] as const)[Math.floor(r() * 4)];
    faults.push({
      atMs: Math.floor(r() * 8_000),
      kind,
      worker: Math.floor(r() * WORKERS),
      // Up to 25 s: past a 15 s lease and a 6 s session, so stale holders happen.
      forMs: 500 + Math.floor(r() * 24_500),
    });
  }
  faults.sort((a, b) => a.atMs - b.atMs);
  const lossy = r() < 0.5;
  const network: NetworkFaults = {
    lossRate: lossy ? Math.floor(r() * 8) / 100 : 0,
    duplicateRate: lossy ? Math.floor(r() * 5) / 100 : 0,
    delayMinMs: 1,
    delayMaxMs: 1 + Math.floor(r() * 30),
    slowRate: lossy ? Math.floor(r() * 5) / 100 : 0,
    slowMs: 500 + Math.floor(r() * 4_000),
  };
  return { faults, network };
}

/** Each account's payout amounts, drawn from the run's stream. */
function amountsOf(random: () => number): number[][] {
  return Array.from({ length: ACCOUNTS }, () =>
    Array.from({ length: PAYOUTS_PER_ACCOUNT }, () => 100 + Math.floor(random() * 900)),
  );
}

function scheduleFault(sched: SimScheduler, f: Fault, worker: SimWorker, net: SimNetwork): void {
  sched.schedule(f.atMs, () => {
    if (f.kind === 'pause') worker.proc.pause(f.forMs);
    else if (f.kind === 'partition') net.partition(worker.proc.name, f.forMs);
    else {
      worker.proc.crash();
      sched.schedule(f.forMs, () => worker.start());
    }
  });
}

/** Row ids (libs/persistence rowId) from virtual time and the seed's own stream. */
function seededRowIds(sched: SimScheduler, seed: number): void {
  const r = mulberry32(seed ^ 0x1d5);
  const hex = (n: number) =>
    Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');
  useRowIdSource({
    nowMs: () => SIM_EPOCH_MS + sched.now,
    uuid: () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[Math.floor(r() * 4)]}${hex(3)}-${hex(12)}`,
  });
}

/** One seed: build the world, run it on virtual time, check everything, hash the history. */
export async function runSeed(options: SimOptions): Promise<SimResult> {
  const sched = new SimScheduler();
  seededRowIds(sched, options.seed);
  try {
    return await runWorld(options, sched);
  } finally {
    useRowIdSource(null);
  }
}

async function runWorld(options: SimOptions, sched: SimScheduler): Promise<SimResult> {
  const drawn = drawSchedule(options.seed);
  const faults = options.faults ?? drawn.faults;
  const network = options.network ?? drawn.network;
  const random = mulberry32(options.seed);
  const net = new SimNetwork(sched, random, network);
  const broken = options.broken;
  const workerFaults: WorkerFaults = {
    trustsExpiredLease: broken === 'sdk-trusts-expired-lease',
    retriesRailTimeout: broken === 'executor-retries-rail-timeout',
  };
  const accounts = Array.from({ length: ACCOUNTS }, (_, a) => ({
    accountId: `acct-${a}`,
    balanceMinor: 1_000_000,
  }));
  const balances = new Map(accounts.map((a) => [a.accountId, a.balanceMinor]));
  const amounts = amountsOf(random);
  const world: World = {
    sched,
    net,
    random,
    server: new LockServerNode(sched, random, {
      brokenStore: broken && STORE_BREAKS[broken],
    }),
    guards: undefined as unknown as SimGuards,
    rail: new RailJournal(),
    railTimeoutRate: 0.15,
    faults: workerFaults,
    leaseViolations: [],
    submitsUnknown: new Set(),
    resubmits: [],
  };
  const setup = { accounts, amounts, skipFence: broken === 'guard-skips-fence' };
  world.guards = await openGuards(options.guards ?? 'model', world, setup);
  try {
    return await runOpenWorld(options, world, { faults, network, balances });
  } finally {
    await world.guards.close();
  }
}

/** The run itself, once its guards are open: workers, faults, virtual time, the checks. */
async function runOpenWorld(
  options: SimOptions,
  world: World,
  drawn: { faults: Fault[]; network: NetworkFaults; balances: Map<string, number> },
): Promise<SimResult> {
  const { sched, net, guards } = world;
  const { faults, network, balances } = drawn;
  const payouts = guards.payouts;
  const workers = Array.from(
    { length: WORKERS },
    (_, i) => new SimWorker(new SimProcess(`worker-${i}`, sched), world),
  );
  workers.forEach((w) => w.start());
  for (const f of faults) scheduleFault(sched, f, workers[f.worker % WORKERS], net);
  const state = (p: SimPayout) => guards.states.get(p.payoutId)!;
  // Done when no payout is left to move: heartbeats alone would only lengthen the history.
  const quiet = () =>
    payouts.every((p) => {
      const settled = state(p);
      return isTerminalPayoutState(settled) || settled === 'RAIL_AMBIGUOUS';
    });
  await sched.run(RUN_VIRTUAL_MS, EVENTS_MAX, quiet);
  const records = await guards.records();
  const violations = await checkRun(world, records, balances);
  return {
    seed: options.seed,
    faults,
    network,
    violations,
    failed: Object.keys(violations).length > 0,
    historyHash: hashOf(world, records),
    virtualMs: sched.now,
    events: sched.events,
    payoutsPosted: payouts.filter((p) => state(p) === 'POSTED').length,
    payoutsSettled: payouts.filter((p) => state(p) !== 'PENDING').length,
    statements: guards.statements(),
  };
}

function hashOf(w: World, g: GuardRecords): string {
  const replacer = (_k: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);
  const h = createHash('sha256');
  h.update(JSON.stringify(w.server.calls, replacer));
  h.update(JSON.stringify(g.admitted, replacer));
  h.update(JSON.stringify(w.rail.presentations, replacer));
  h.update(JSON.stringify([...w.rail.paid], replacer));
  return h.digest('hex');
}

/** The one line that replays a run exactly (`faults` only when it is not the seed's own). */
export function replayCommand(
  r: { seed: number; guards?: GuardMode; faults?: Fault[]; network?: NetworkFaults },
  broken?: BrokenVariant,
): string {
  const parts = ['npm run sim --', `--seed ${r.seed}`];
  if (r.guards && r.guards !== 'model') parts.push(`--guards ${r.guards}`);
  if (broken) parts.push(`--broken ${broken}`);
  if (r.faults) parts.push(`--faults '${JSON.stringify(r.faults)}'`);
  if (r.network) parts.push(`--network '${JSON.stringify(r.network)}'`);
  return parts.join(' ');
}
