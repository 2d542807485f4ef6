/**
 * Server-side waiters per key, in this process (L4 waitMillis). The cap
 * bounds memory and wake-up storms; L7's waiterCount reads the same count,
 * so with several replicas each reports only its own waiters.
 */
export class Waiters {
  private readonly byKey = new Map<string, number>();
  private total = 0;

  constructor(private readonly maxPerKey: number) {}

  /** Registers one waiter; false when the key already has `maxPerKey`. */
  tryEnter(key: string): boolean {
    const n = this.byKey.get(key) ?? 0;
    if (n >= this.maxPerKey) return false;
    this.byKey.set(key, n + 1);
    this.total++;
    return true;
  }

  leave(key: string): void {
    const n = this.byKey.get(key) ?? 0;
    if (n <= 1) this.byKey.delete(key);
    else this.byKey.set(key, n - 1);
    this.total = Math.max(0, this.total - 1);
  }

  count(key: string): number {
    return this.byKey.get(key) ?? 0;
  }

  all(): number {
    return this.total;
  }
}
