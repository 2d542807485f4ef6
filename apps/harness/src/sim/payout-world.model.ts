import { PAYOUT_SAFETY_EVENTS, registerPayoutVocabulary } from '@dlock/payout-contract';
import { registerSafetyEvents } from '@dlock/observability';

// The simulated payout services and executors answer and emit what the real ones register.
registerPayoutVocabulary();
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);

/** One payout of the simulated world, as the intake created it. */
export interface SimPayout {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  beneficiaryRef: string;
}

/** One presentation the rail was shown, with the token the proxy admitted it under. */
export interface Presentation {
  at: number;
  accountId: string;
  payoutId: string;
  token: bigint;
}

/**
 * The rail stub's journal: what it was shown and what it paid (whether or
 * not its answer ever arrived). The guards in front of it are the real
 * services (payment-node.sim.ts, proxy-node.sim.ts); this is the world outside them.
 */
export class RailJournal {
  readonly presentations: Presentation[] = [];
  /** Payouts the rail paid, with how many times. */
  readonly paid = new Map<string, number>();

  pay(payoutId: string): void {
    this.paid.set(payoutId, (this.paid.get(payoutId) ?? 0) + 1);
  }
}
