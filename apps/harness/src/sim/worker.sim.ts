import { isTerminalPayoutState } from '@dlock/payout-contract';
import { LockClient, type LockSession } from '@dlock/lock-client';
import type { PayoutSummary } from '@dlock/payout-contract';
import { SIM_EPOCH_MS } from './scheduler.sim';
import { simExecutor, watchedSession } from './executor-node.sim';
import type { LockServerNode } from './lock-server-node.sim';
import type { SimNetwork } from './network.sim';
import type { SimGuards } from './guards.sim';
import type { RailJournal, SimPayout } from './payout-world.model';
import type { SimProcess, SimScheduler } from './scheduler.sim';

export interface WorkerFaults {
  /** Negative control: the handle's liveness checks always pass (an SDK trusting an expired lease). */
  trustsExpiredLease?: boolean;
  /** Negative control: a submit that got no answer is presented once more. */
  retriesRailTimeout?: boolean;
}

/** The shared world a worker acts on, and what the checks collect from it. */
export interface World {
  sched: SimScheduler;
  net: SimNetwork;
  random: () => number;
  server: LockServerNode;
  /** payment-resource and rail-proxy: the model or the real services (guards.sim.ts). */
  guards: SimGuards;
  rail: RailJournal;
  /** Rail stub fault: the rail does not answer within the proxy's read timeout. */
  railTimeoutRate: number;
  faults: WorkerFaults;
  /** Liveness checks that passed while the server no longer held the lease (FR-11). */
  leaseViolations: string[];
  /** Submits (payout@token) that got no answer once connected: their outcome is unknown. */
  submitsUnknown: Set<string>;
  /** Submits sent again after an unknown outcome under the same token (FR-23 forbids it). */
  resubmits: string[];
}

/** The executor's defaults (apps/executor config.ts): the lease's safe part covers a submit. */
const LOCK_TTL_MS = 20_000;
const SESSION_TTL_MS = 15_000;

/**
 * One executor process of the simulation: the real lock-client SDK (session,
 * heartbeats, conservative deadlines, checkStillHeld, acquire retries) and
 * the real PayoutExecutionService (docs/executor.md's order, recovery by state) on this
 * process's clock and network. It picks payouts the way the poll does (any
 * not settled, by the seed); a crash freezes an incarnation for good, and
 * the restart is a new client and session.
 */
export class SimWorker {
  constructor(
    readonly proc: SimProcess,
    private readonly w: World,
  ) {}

  /** Starts an incarnation; it runs until the process crashes or nothing is left to pay. */
  start(): void {
    const incarnation = this.proc.incarnation;
    this.proc.schedule(0, () => void this.loop(incarnation).catch(() => undefined));
  }

  private async loop(incarnation: number): Promise<void> {
    const w = this.w;
    const client = new LockClient({
      baseUrl: 'http://lock-server.sim',
      ownerId: this.proc.name,
      clock: this.proc.clock(),
      random: w.random,
      transport: w.net.transport(this.proc, w.server.serve),
      sessionTtlMs: SESSION_TTL_MS,
      lockTtlMs: LOCK_TTL_MS,
    });
    const executor = simExecutor(w, this.proc);
    const stop = new AbortController();
    let session: LockSession | null = null;
    while (this.proc.incarnation === incarnation) {
      if (!session || session.state !== 'open') {
        session = await client.openSession().catch(() => null);
        if (!session) {
          await this.sleep(200);
          continue;
        }
      }
      const open = w.guards.payouts.filter((p) => !settled(w.guards.states.get(p.payoutId)!));
      if (open.length === 0) return;
      const payout = open[Math.floor(w.random() * open.length)];
      const watched = watchedSession(session, w, this.proc);
      // Acquire failures are thrown: the lane stops for a moment (fail closed), then goes on.
      await executor.execute(watched, this.summary(payout), stop.signal).catch(() => undefined);
      await this.sleep(Math.floor(w.random() * 50));
    }
  }

  /** What the poll (P1) would list: the payout's state when it was read. */
  private summary(p: SimPayout): PayoutSummary {
    return {
      payoutId: p.payoutId,
      accountId: p.accountId,
      amountMinor: p.amountMinor,
      currency: 'EUR',
      beneficiaryRef: p.beneficiaryRef,
      state: this.w.guards.states.get(p.payoutId)!,
      attemptCount: 0,
      createdAt: new Date(SIM_EPOCH_MS).toISOString(),
    };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.proc.schedule(ms, resolve));
  }
}

function settled(state: string): boolean {
  return isTerminalPayoutState(state) || state === 'RAIL_AMBIGUOUS';
}
