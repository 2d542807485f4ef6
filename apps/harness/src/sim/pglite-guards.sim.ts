import type { PayoutState } from '@dlock/payout-contract';
import type { GuardRecords } from './sim.checker';
import type { GuardClients, GuardSetup, SimGuards } from './guards.sim';
import { PaymentNode } from './payment-node.sim';
import { PglitePaymentResource, PgliteRailProxy, simRail } from './pglite-clients.sim';
import type { SimPayout } from './payout-world.model';
import { ProxyNode } from './proxy-node.sim';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler.sim';
import { closeSimDatabases } from './sim-database.sim';
import type { World } from './worker.sim';

/** Every PGlite database this process opened, closed: nothing is left to keep it alive. */
export { closeSimDatabases };

/**
 * The real services on PGlite (payment-node.sim.ts, proxy-node.sim.ts): their SQL is
 * where the fence predicate and the idempotency live; ~40x slower than the
 * model. Loaded only for `--guards pglite` (guards.sim.ts).
 */
export class PgliteGuards implements SimGuards {
  /** Submits at the proxy not answered yet, by idempotency scope (pglite-clients.sim.ts). */
  readonly inFlight = new Map<string, Promise<unknown>>();
  proxy!: ProxyNode;

  private constructor(
    private readonly w: World,
    readonly payment: PaymentNode,
    readonly payouts: readonly SimPayout[],
  ) {}

  static async open(w: World, s: GuardSetup): Promise<PgliteGuards> {
    const now = () => w.sched.now;
    // The guard that skips its fence is the service's own kill switch (PAYMENT_FENCING_ENABLED).
    const payment = await PaymentNode.open(now, !s.skipFence);
    try {
      const g = new PgliteGuards(w, payment, await payment.seed(s.accounts, s.amounts));
      g.proxy = await ProxyNode.open(now, simRail(w, g));
      return g;
    } catch (err) {
      await payment.close();
      throw err;
    }
  }

  get states(): ReadonlyMap<string, PayoutState> {
    return this.payment.states;
  }

  clients(proc: SimProcess): GuardClients {
    return {
      payment: new PglitePaymentResource(this.w, this, proc),
      rail: new PgliteRailProxy(this.w, this, proc),
    };
  }

  async records(): Promise<GuardRecords> {
    return {
      admitted: await this.payment.admitted(SIM_EPOCH_MS),
      ...(await this.payment.ledger()),
    };
  }

  statements(): number {
    return this.payment.db.statements + this.proxy.db.statements;
  }

  /** The seed's Nest modules; the databases stay open for the next seed (closeSimDatabases). */
  async close(): Promise<void> {
    await Promise.all([this.payment.close(), this.proxy?.close()]);
  }
}
