import { isTerminalPayoutState } from '@dlock/payout-contract';
import { createHash } from 'node:crypto';
import { mulberry32 } from '@dlock/prng';
import type { BrokenMode } from '../../../lock-server/src/locks/persistence/broken-lock.store';
import { checkRun, type Violations } from './checks';
import { LockServerNode } from './lock-server-node';
import { SimNetwork, type NetworkFaults } from './network';
import { PaymentGuard, RailProxy, type SimPayout } from './payout-world';
import { SimProcess, SimScheduler } from './scheduler';
import { SimWorker, type World, type WorkerFaults } from './worker';

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

function payoutsOf(random: () => number): SimPayout[] {
  const out: SimPayout[] = [];
  for (let a = 0; a < ACCOUNTS; a++)
    for (let i = 0; i < PAYOUTS_PER_ACCOUNT; i++)
      out.push({
        payoutId: `00000000-0000-4000-8000-${String(a * 100 + i).padStart(12, '0')}`,
        accountId: `acct-${a}`,
        amountMinor: 100 + Math.floor(random() * 900),
        state: 'PENDING',
        submissionId: null,
        railReference: null,
      });
  return out;
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

/** One seed: build the world, run it on virtual time, check everything, hash the history. */
export async function runSeed(options: SimOptions): Promise<SimResult> {
  const drawn = drawSchedule(options.seed);
  const faults = options.faults ?? drawn.faults;
  const network = options.network ?? drawn.network;
  const random = mulberry32(options.seed);
  const sched = new SimScheduler();
  const net = new SimNetwork(sched, random, network);
  const broken = options.broken;
  const workerFaults: WorkerFaults = {
    trustsExpiredLease: broken === 'sdk-trusts-expired-lease',
    retriesRailTimeout: broken === 'executor-retries-rail-timeout',
  };
  const guard = new PaymentGuard({ skipFence: broken === 'guard-skips-fence' });
  const balances = new Map<string, number>();
  for (let a = 0; a < ACCOUNTS; a++) {
    guard.addAccount(`acct-${a}`, 1_000_000);
    balances.set(`acct-${a}`, 1_000_000);
  }
  const payouts = payoutsOf(random);
  payouts.forEach((p) => guard.addPayout(p));
  const world: World = {
    sched,
    net,
    random,
    server: new LockServerNode(sched, random, {
      brokenStore: broken && STORE_BREAKS[broken],
    }),
    guard,
    proxy: new RailProxy(),
    payouts,
    railTimeoutRate: 0.15,
    faults: workerFaults,
    leaseViolations: [],
    submitsUnknown: new Set(),
    resubmits: [],
  };
  const workers = Array.from(
    { length: WORKERS },
    (_, i) => new SimWorker(new SimProcess(`worker-${i}`, sched), world),
  );
  workers.forEach((w) => w.start());
  for (const f of faults) scheduleFault(sched, f, workers[f.worker % WORKERS], net);
  // Done when no payout is left to move: heartbeats alone would only lengthen the history.
  const quiet = () =>
    payouts.every((p) => {
      const state = guard.payouts.get(p.payoutId)!.state;
      return isTerminalPayoutState(state) || state === 'RAIL_AMBIGUOUS';
    });
  await sched.run(RUN_VIRTUAL_MS, EVENTS_MAX, quiet);
  const violations = await checkRun(world, balances);
  const settled = payouts.filter((p) => guard.payouts.get(p.payoutId)!.state !== 'PENDING');
  return {
    seed: options.seed,
    faults,
    network,
    violations,
    failed: Object.keys(violations).length > 0,
    historyHash: hashOf(world),
    virtualMs: sched.now,
    events: sched.events,
    payoutsPosted: payouts.filter((p) => guard.payouts.get(p.payoutId)!.state === 'POSTED').length,
    payoutsSettled: settled.length,
  };
}

function hashOf(w: World): string {
  const replacer = (_k: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v);
  const h = createHash('sha256');
  h.update(JSON.stringify(w.server.calls, replacer));
  h.update(JSON.stringify(w.guard.admitted, replacer));
  h.update(JSON.stringify(w.proxy.presentations, replacer));
  h.update(JSON.stringify([...w.proxy.paid], replacer));
  return h.digest('hex');
}

/** The one line that replays a run exactly (`faults` only when it is not the seed's own). */
export function replayCommand(
  r: { seed: number; faults?: Fault[]; network?: NetworkFaults },
  broken?: BrokenVariant,
): string {
  const parts = ['npm run sim --', `--seed ${r.seed}`];
  if (broken) parts.push(`--broken ${broken}`);
  if (r.faults) parts.push(`--faults '${JSON.stringify(r.faults)}'`);
  if (r.network) parts.push(`--network '${JSON.stringify(r.network)}'`);
  return parts.join(' ');
}
