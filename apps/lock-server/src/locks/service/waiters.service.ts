/** The caps on server-side waiters (L4 waitMillis) in this process, from config. */
export interface WaiterLimits {
  perKeyMax: number;
  perOwnerMax: number;
  totalMax: number;
}

/** Which cap refused a waiter: `details.reason` of the 429 (docs/lock-server.md, "Limits"). */
export type WaiterRefusal = 'waiters-per-key' | 'waiters-per-owner' | 'waiters-total';

/**
 * Server-side waiters per key, per owner and in all, in this process. The
 * caps bound memory, wake-up storms and the re-tries waiters make against the
 * backend, so one identity cannot fill the process with waiters and slow
 * everyone else's heartbeats (docs/lock-server.md, "Limits"). L7's
 * waiterCount reads the per-key count: with several replicas each reports
 * only its own waiters.
 */
export class Waiters {
  private readonly byKey = new Map<string, number>();
  private readonly byOwner = new Map<string, number>();
  private total = 0;

  constructor(readonly limits: WaiterLimits) {}

  /** Registers one waiter, or names the cap that refuses it. */
  tryEnter(key: string, owner: string): WaiterRefusal | undefined {
    if (this.total >= this.limits.totalMax) return 'waiters-total';
    if (this.count(key) >= this.limits.perKeyMax) return 'waiters-per-key';
    if (this.ofOwner(owner) >= this.limits.perOwnerMax) return 'waiters-per-owner';
    bump(this.byKey, key, 1);
    bump(this.byOwner, owner, 1);
    this.total++;
    return undefined;
  }

  leave(key: string, owner: string): void {
    bump(this.byKey, key, -1);
    bump(this.byOwner, owner, -1);
    this.total = Math.max(0, this.total - 1);
  }

  count(key: string): number {
    return this.byKey.get(key) ?? 0;
  }

  ofOwner(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }

  all(): number {
    return this.total;
  }
}

/** Adds `by` to a count, dropping the entry at zero (the maps stay as small as the waiters). */
function bump(counts: Map<string, number>, name: string, by: number): void {
  const n = (counts.get(name) ?? 0) + by;
  if (n <= 0) counts.delete(name);
  else counts.set(name, n);
}
