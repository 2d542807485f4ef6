import { SESSION_TTL_MIN_MS } from '@dlock/lock-api';
import type { LockOp } from './lock-op.model';

interface Evidence {
  /** Send times of the session's L1 and L2 calls that answered success, ascending. */
  sentAt: number[];
  ttlMs: number;
  /** Proofs of life preceded by a gap of a full TTL (or by none at all), ascending. */
  afterGap: number[];
}

/**
 * When a session may have expired, as far as the recorded calls show
 * (docs/harness.md, "How expiry is modelled"). A successful L1 or L2 sent at
 * t proves the server restarted the session's TTL at some instant at or after
 * t, so the session cannot lapse before t + TTL. Nothing else is evidence:
 * without it the session may lapse at any moment. Expiry is never forced
 * (the server may revive a lapsed session after an outage, docs/lock-server.md
 * "Grace after an outage"), so this only answers whether it *may* have lapsed.
 */
export class SessionClock {
  private readonly sessions = new Map<string, Evidence>();

  /** `slackMs` is taken off every TTL: timer granularity and clock slew on the server. */
  constructor(
    ops: readonly LockOp[],
    private readonly slackMs: number,
  ) {
    const ttls = new Map<string, number>();
    for (const op of ops) {
      if ((op.kind !== 'open' && op.kind !== 'heartbeat') || op.session === null) continue;
      if (op.answer.type !== 'done') continue;
      const e = this.sessions.get(op.session) ?? { sentAt: [], ttlMs: Infinity, afterGap: [] };
      e.sentAt.push(op.callAt);
      this.sessions.set(op.session, e);
      const ttl = op.answer.ttlMs;
      // L1's TTL is the session's; an L2 only bounds it (its expiry minus server time).
      if (ttl !== undefined && op.kind === 'open') ttls.set(op.session, ttl);
      else if (ttl !== undefined && !ttls.has(op.session)) e.ttlMs = Math.min(e.ttlMs, ttl);
    }
    for (const [session, e] of this.sessions) {
      e.sentAt.sort((a, b) => a - b);
      e.ttlMs = ttls.get(session) ?? (Number.isFinite(e.ttlMs) ? e.ttlMs : SESSION_TTL_MIN_MS);
      const ttl = e.ttlMs - this.slackMs;
      e.afterGap = e.sentAt.filter((t, i) => i === 0 || t - e.sentAt[i - 1] >= ttl);
    }
  }

  /** Whether the session may have lapsed at some instant in [fromMs, toMs]. */
  mayLapse(session: string | null, fromMs: number, toMs: number): boolean {
    const e = session === null ? undefined : this.sessions.get(session);
    if (!e) return true;
    const ttl = e.ttlMs - this.slackMs;
    const i = lastAtOrBefore(e.sentAt, toMs);
    if (i < 0 || toMs >= e.sentAt[i] + ttl) return true;
    // A full TTL without proof of life (or none yet) that ends inside the interval.
    const g = lastAtOrBefore(e.afterGap, toMs);
    return g >= 0 && e.afterGap[g] > fromMs;
  }
}

/** Index of the last element <= x in an ascending array, or -1. */
function lastAtOrBefore(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
