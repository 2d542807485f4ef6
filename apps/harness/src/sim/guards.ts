import type { PaymentResourceClient, PayoutState, RailProxyClient } from '@dlock/payout-contract';
import type { GuardRecords } from './checks';
import { PgliteRailProxy, PglitePaymentResource, simRail } from './executor-node';
import { ModelGuards } from './model-node';
import { PaymentNode } from './payment-node';
import type { SimPayout } from './payout-world';
import { ProxyNode } from './proxy-node';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler';
import type { World } from './worker';

/** Which guards a run puts in front of the rail (docs/harness.md, "Deterministic simulation"). */
export const GUARD_MODES = ['model', 'pglite'] as const;
export type GuardMode = (typeof GUARD_MODES)[number];

/** The executor's two peers, as one process sees them. */
export interface GuardClients {
  payment: PaymentResourceClient;
  rail: RailProxyClient;
}

/** payment-resource and rail-proxy in one run: what the workers, the checks and the hash read. */
export interface SimGuards {
  readonly payouts: readonly SimPayout[];
  /** Each payout's state as the guard last committed it. */
  readonly states: ReadonlyMap<string, PayoutState>;
  clients(proc: SimProcess): GuardClients;
  records(): Promise<GuardRecords>;
  /** SQL statements the guards' databases ran (0 for the model). */
  statements(): number;
}

export interface GuardSetup {
  accounts: { accountId: string; balanceMinor: number }[];
  amounts: number[][];
  /** Negative control: payment-resource admits every token. */
  skipFence: boolean;
}

/**
 * The real services on PGlite (payment-node.ts, proxy-node.ts): their SQL is
 * where the fence predicate and the idempotency live; ~40x slower than the model.
 */
export class PgliteGuards implements SimGuards {
  /** Submits at the proxy not answered yet, by idempotency scope (executor-node.ts). */
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
    const g = new PgliteGuards(w, payment, await payment.seed(s.accounts, s.amounts));
    g.proxy = await ProxyNode.open(now, simRail(w, g));
    return g;
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
}

export async function openGuards(mode: GuardMode, w: World, s: GuardSetup): Promise<SimGuards> {
  switch (mode) {
    case 'model':
      return new ModelGuards(w, s.accounts, s.amounts, s.skipFence);
    case 'pglite':
      return PgliteGuards.open(w, s);
    default:
      throw new Error(`unknown guards mode ${String(mode)}`);
  }
}
