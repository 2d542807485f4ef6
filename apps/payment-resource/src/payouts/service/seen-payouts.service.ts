import { Injectable } from '@nestjs/common';
import { isTerminalPayoutState } from '@dlock/payout-contract';
import type { SeenPayout } from '../persistence/fast-transition.repository';

/** Payouts remembered at once; the oldest entry goes first (a payout in flight is seconds old). */
export const SEEN_PAYOUTS_MAX = 10_000;

/**
 * The rows this process's last fast write of a payout left behind, so the
 * payout's next fast write skips its read (docs/payment-resource.md, "The
 * one-statement fast path", step 1). An entry is only a guess: the statement
 * pins the row versions it carries, so a payout or account changed by anyone
 * since makes it write nothing, and the write starts over from a fresh read.
 * `take` removes the entry, so only a write that succeeded on the fast path
 * leaves one.
 */
@Injectable()
export class SeenPayouts {
  private readonly seen = new Map<string, SeenPayout>();

  take(payoutId: string): SeenPayout | null {
    const entry = this.seen.get(payoutId);
    if (entry === undefined) return null;
    this.seen.delete(payoutId);
    return entry;
  }

  remember(entry: SeenPayout): void {
    this.seen.delete(entry.payout.payoutId);
    // Nothing writes a settled payout again.
    if (isTerminalPayoutState(entry.payout.state)) return;
    this.seen.set(entry.payout.payoutId, entry);
    if (this.seen.size > SEEN_PAYOUTS_MAX) {
      // A Map iterates in insertion order: the first key is the oldest.
      const oldest = this.seen.keys().next();
      if (oldest.done !== true) this.seen.delete(oldest.value);
    }
  }
}
