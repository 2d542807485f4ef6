import { HOP_BUDGETS, PeerUnavailableError, peerUnavailable } from '@dlock/http-client';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import { payoutLockKey } from '@dlock/payout-contract';
import type { PayoutEvent } from '../../../payment-resource/src/payouts/domain/transition-table';
import type { LockServerNode } from './lock-server-node';
import type { SimNetwork } from './network';
import type { PaymentGuard, RailProxy, SimPayout } from './payout-world';
import type { SimProcess, SimScheduler } from './scheduler';

/** The submit's budget: the rail's read timeout plus slack (apps/executor lease.ts, defaults). */
export const SUBMIT_BUDGET = { connectTimeoutMs: 1_000, readTimeoutMs: 7_000 };
const SUBMIT_BUDGET_MS = SUBMIT_BUDGET.connectTimeoutMs + SUBMIT_BUDGET.readTimeoutMs;

export interface WorkerFaults {
  /** Negative control: the handle's liveness checks always pass (an SDK trusting an expired lease). */
  trustsExpiredLease?: boolean;
  /** Negative control: a submit that timed out is presented once more. */
  retriesRailTimeout?: boolean;
}

/** The shared world a worker acts on, and what the checks collect from it. */
export interface World {
  sched: SimScheduler;
  net: SimNetwork;
  random: () => number;
  server: LockServerNode;
  guard: PaymentGuard;
  proxy: RailProxy;
  payouts: readonly SimPayout[];
  /** Rail stub fault: the rail pays, then its answer comes after every budget. */
  railTimeoutRate: number;
  faults: WorkerFaults;
  /** Liveness checks that passed while the server no longer held the lease (FR-11). */
  leaseViolations: string[];
  /** Submissions the workers presented, per payout and token (FR-23: never twice). */
  submitAttempts: Map<string, number>;
  attempts: { posted: number; ended: number };
}

/** The default lease: its safe part (70 %) covers the submit's whole budget. */
const LOCK_TTL_MS = 15_000;
const SESSION_TTL_MS = 6_000;

/**
 * One executor process of the simulation: the real lock-client SDK (session,
 * heartbeats, conservative deadlines, checkStillHeld, acquire retries) on
 * this process's clock and network, driving payouts in the executor's
 * order (docs/executor.md): acquire, claim, RAIL_SUBMITTED, submit once,
 * the outcome, post, release. A crash freezes an incarnation for good; the
 * restart is a new client and session, recovering payouts by their state.
 */
export class SimWorker {
  constructor(
    readonly proc: SimProcess,
    private readonly w: World,
  ) {}

  /** Starts an incarnation; it runs until the process crashes. */
  start(): void {
    const incarnation = this.proc.incarnation;
    this.proc.schedule(0, () => void this.loop(incarnation).catch(() => undefined));
  }

  private alive(incarnation: number): boolean {
    return this.proc.incarnation === incarnation;
  }

  private async loop(incarnation: number): Promise<void> {
    const w = this.w;
    const client = new LockClient({
      baseUrl: 'http://lock-server.sim',
      ownerId: `${this.proc.name}`,
      clock: this.proc.clock(),
      random: w.random,
      transport: w.net.transport(this.proc, w.server.serve),
      sessionTtlMs: SESSION_TTL_MS,
      lockTtlMs: LOCK_TTL_MS,
    });
    let session: LockSession | null = null;
    while (this.alive(incarnation)) {
      if (!session || session.state !== 'open') {
        session = await client.openSession().catch(() => null);
        if (!session) {
          await this.sleep(200);
          continue;
        }
      }
      const open = w.payouts.filter((p) => !isSettled(w.guard.payouts.get(p.payoutId)!.state));
      if (open.length === 0) return;
      const payout = open[Math.floor(w.random() * open.length)];
      await this.attempt(session, payout).catch(() => undefined);
      w.attempts.ended++;
      await this.sleep(Math.floor(w.random() * 50));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.proc.schedule(ms, resolve));
  }

  private async attempt(session: LockSession, payout: SimPayout): Promise<void> {
    let handle: LockHandle;
    try {
      handle = await session.acquire(payoutLockKey(payout.accountId));
    } catch {
      return;
    }
    if (this.w.faults.trustsExpiredLease) {
      handle.checkStillHeld = () => undefined;
      handle.leaseCovers = (budgetMs) => ({
        ok: true,
        remainingMs: budgetMs,
        requiredMs: budgetMs,
      });
    }
    try {
      await this.run(handle, payout.payoutId);
    } finally {
      await handle.release();
    }
  }

  /** The steps of one attempt, entered by the payout's state (recovery by state). */
  private async run(h: LockHandle, payoutId: string): Promise<void> {
    const view = await this.hop(() => Promise.resolve(this.w.guard.get(payoutId)), 'read');
    switch (view.state) {
      case 'PENDING':
      case 'CLAIMED':
        await this.write(h, payoutId, 'CLAIM');
        await this.write(h, payoutId, 'RAIL_SUBMITTED');
        return this.submit(h, payoutId);
      case 'RAIL_SUBMITTED': {
        const record = await this.hop(() => Promise.resolve(this.w.proxy.record(payoutId)), 'read');
        if (record?.outcome === 'ACKED') return this.finish(h, payoutId);
        if (record) return this.quarantine(h, payoutId);
        // Nothing was ever presented: record the intent again under this token, then submit.
        await this.write(h, payoutId, 'RAIL_SUBMITTED');
        return this.submit(h, payoutId);
      }
      case 'RAIL_ACKED':
        await this.write(h, payoutId, 'POST');
        this.w.attempts.posted++;
        return;
      default:
        return;
    }
  }

  /** The one presentation; a timeout is RAIL_AMBIGUOUS, never re-sent (FR-23). */
  private async submit(h: LockHandle, payoutId: string): Promise<void> {
    if (!h.leaseCovers(SUBMIT_BUDGET_MS).ok) return;
    this.checkStillHeld(h);
    const tries = this.w.faults.retriesRailTimeout ? 2 : 1;
    for (let i = 0; i < tries; i++) {
      const key = `${payoutId}@${h.fencingToken}`;
      this.w.submitAttempts.set(key, (this.w.submitAttempts.get(key) ?? 0) + 1);
      try {
        await this.w.net.call(
          this.proc,
          () => this.railHandler(payoutId, h),
          SUBMIT_BUDGET,
          (p, m) => peerUnavailable('rail-proxy', p, m),
        );
        return this.finish(h, payoutId);
      } catch (err) {
        const timedOut = err instanceof PeerUnavailableError && err.phase === 'response';
        if (!timedOut) throw err;
      }
    }
    return this.quarantine(h, payoutId);
  }

  private async railHandler(payoutId: string, h: LockHandle): Promise<void> {
    const w = this.w;
    const p = w.guard.payouts.get(payoutId)!;
    w.proxy.submit(w.sched.now, p.accountId, payoutId, h.fencingToken);
    // The rail took it, and its answer outlives every caller's budget.
    if (w.random() < w.railTimeoutRate) await w.sched.sleep(SUBMIT_BUDGET_MS + 1_000);
  }

  private async finish(h: LockHandle, payoutId: string): Promise<void> {
    await this.write(h, payoutId, 'RAIL_ACKED');
    await this.write(h, payoutId, 'POST');
    this.w.attempts.posted++;
  }

  /** RAIL_AMBIGUOUS: terminal for every worker under every token until resolved by evidence. */
  private async quarantine(h: LockHandle, payoutId: string): Promise<void> {
    await this.write(h, payoutId, 'RAIL_AMBIGUOUS', false);
  }

  private async write(
    h: LockHandle,
    payoutId: string,
    event: PayoutEvent,
    liveness = true,
  ): Promise<void> {
    if (liveness) this.checkStillHeld(h);
    const token = h.fencingToken;
    await this.hop(() => {
      this.w.guard.write(this.w.sched.now, payoutId, token, event);
      return Promise.resolve();
    }, 'write');
  }

  /** FR-13 before each side effect, and the check that the SDK's belief was safe (FR-11). */
  private checkStillHeld(h: LockHandle): void {
    h.checkStillHeld();
    const s = this.w.server.state;
    const row = s.locks.get(h.key);
    if (!row || row.token !== h.fencingToken || !s.isLive(row)) {
      this.w.leaseViolations.push(
        `${this.proc.name} at ${this.w.sched.now} ms believed it held ${h.key} with token ` +
          `${h.fencingToken}, which the lock-server no longer held`,
      );
    }
  }

  private hop<T>(handler: () => Promise<T>, kind: 'read' | 'write'): Promise<T> {
    const budget = kind === 'read' ? HOP_BUDGETS.advisoryRead : HOP_BUDGETS.fencedWrite;
    return this.w.net.call(this.proc, handler, budget, (p, m) =>
      peerUnavailable('payment-resource', p, m),
    );
  }
}

function isSettled(state: string): boolean {
  return (
    state === 'POSTED' || state === 'FAILED' || state === 'ABANDONED' || state === 'RAIL_AMBIGUOUS'
  );
}
