import assert from 'node:assert/strict';

/**
 * Payouts payment-resource refused as invalid in this process, at most
 * `remembered` of them, oldest forgotten first: the poll leaves them to an
 * operator (docs/executor.md) without the memory growing with every refusal.
 */
export class RefusedPayouts {
  private readonly ids = new Set<string>();

  constructor(private readonly remembered: number) {
    assert.ok(Number.isInteger(remembered) && remembered >= 1, 'remember at least one payout');
  }

  add(payoutId: string): void {
    if (this.ids.has(payoutId)) return;
    if (this.ids.size === this.remembered) {
      // A Set iterates in insertion order: the first id is the oldest.
      const [oldest] = this.ids;
      this.ids.delete(oldest);
    }
    this.ids.add(payoutId);
  }

  has(payoutId: string): boolean {
    return this.ids.has(payoutId);
  }
}
