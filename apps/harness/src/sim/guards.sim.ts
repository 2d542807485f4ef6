import type { PaymentResourceClient, PayoutState, RailProxyClient } from '@dlock/payout-contract';
import type { GuardRecords } from './sim.checker';
import { ModelGuards } from './model-guards.sim';
import type { SimPayout } from './payout-world.model';
import type { SimProcess } from './scheduler.sim';
import type { World } from './worker.sim';

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
  /** Releases what the run opened for itself. */
  close(): Promise<void>;
}

export interface GuardSetup {
  accounts: { accountId: string; balanceMinor: number }[];
  amounts: number[][];
  /** Negative control: payment-resource admits every token. */
  skipFence: boolean;
}

/** The PGlite world's modules (Nest, TypeORM, PGlite, both services): loaded by the first pglite run only. */
let pglite: Promise<typeof import('./pglite-guards.sim')> | undefined;

export async function openGuards(mode: GuardMode, w: World, s: GuardSetup): Promise<SimGuards> {
  switch (mode) {
    case 'model':
      return new ModelGuards(w, s.accounts, s.amounts, s.skipFence);
    case 'pglite':
      pglite ??= import('./pglite-guards.sim');
      return (await pglite).PgliteGuards.open(w, s);
    default:
      throw new Error(`unknown guards mode ${String(mode)}`);
  }
}

/** Closes what a pglite run left open (its databases); nothing when none ran. */
export async function closeGuards(): Promise<void> {
  if (pglite) await (await pglite).closeSimDatabases();
}
