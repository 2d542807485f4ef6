/**
 * What a service allows callers without a valid token (docs/security.md,
 * "Limits"): requests per source address, and refusal log lines, per window.
 */
export interface RefusalLimits {
  /** Requests that fail authentication one source address may make per window; then 429. */
  perSourceMax: number;
  /** `auth_refused` log lines per window; the refusals left out are counted into the next line. */
  logLinesMax: number;
  windowMs: number;
}

/** Source addresses remembered at once; past it, windows already over are dropped (bounded memory). */
const SOURCES_TRACKED_MAX = 10_000;

/** Whether a refusal gets its own log line, and how many were left out since the last one. */
export interface LogDecision {
  log: boolean;
  suppressed: number;
}

/**
 * Counts refusals per source address and samples their log lines, in fixed
 * windows. A caller sending garbage tokens is answered 429 after its
 * allowance instead of costing a verification and a log line each time
 * (docs/security.md, "Limits"); the refusal metric still counts every one.
 */
export class RefusalLimiter {
  private readonly sources = new Map<string, { count: number; startMs: number }>();
  private logStartMs = Number.NEGATIVE_INFINITY;
  private logged = 0;
  private suppressed = 0;

  constructor(
    readonly limits: RefusalLimits,
    private readonly nowMs: () => number = () => Date.now(),
  ) {}

  /** Counts one refused request of `source`: 0 within its allowance, else the ms until its window ends. */
  admit(source: string): number {
    const now = this.nowMs();
    let entry = this.sources.get(source);
    if (entry === undefined || now - entry.startMs >= this.limits.windowMs) {
      if (entry === undefined && this.sources.size >= SOURCES_TRACKED_MAX) this.forgetEnded(now);
      entry = { count: 0, startMs: now };
      this.sources.set(source, entry);
    }
    entry.count++;
    if (entry.count <= this.limits.perSourceMax) return 0;
    return Math.max(1, entry.startMs + this.limits.windowMs - now);
  }

  /** Whether this refusal is logged; a logged one carries the count of those left out before it. */
  logLine(): LogDecision {
    const now = this.nowMs();
    if (now - this.logStartMs >= this.limits.windowMs) {
      this.logStartMs = now;
      this.logged = 0;
    }
    if (this.logged >= this.limits.logLinesMax) {
      this.suppressed++;
      return { log: false, suppressed: 0 };
    }
    this.logged++;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    return { log: true, suppressed };
  }

  private forgetEnded(now: number): void {
    for (const [source, entry] of this.sources) {
      if (now - entry.startMs >= this.limits.windowMs) this.sources.delete(source);
    }
    // Every remembered source is mid-window: start over rather than grow without bound.
    if (this.sources.size >= SOURCES_TRACKED_MAX) this.sources.clear();
  }
}
