import assert from 'node:assert/strict';

/** How many recent safety events a process keeps for GET /v1/safety-events (docs/operations.md). */
export const SAFETY_EVENT_FEED_CAPACITY_EVENTS = 1000;

/**
 * How long one record takes in repeats of the same refusal (docs/operations.md,
 * "Safety event feed"): a reader sees a fresh record at least this often.
 */
export const SAFETY_EVENT_COALESCE_WINDOW_MS = 60_000;

/** One safety event as GET /v1/safety-events serves it: what its log line carries, numbered. */
export interface SafetyEventRecord {
  /** 1 for the process's first event, then +1 per event; never reused. */
  seq: number;
  /** When it was emitted, ISO-8601 UTC with milliseconds. */
  at: string;
  event: string;
  /** The log line's fields, bigints already as decimal strings (the first occurrence's). */
  fields: Record<string, unknown>;
  /** A refusal that coalesces: how many times it happened so far, and when last. */
  count?: number;
  lastAt?: string;
}

/** A page of the feed; `nextAfter` is the cursor for the next call. */
export interface SafetyEventPage {
  events: SafetyEventRecord[];
  nextAfter: number;
}

/**
 * The recent safety events of this process, in a fixed-size ring: memory is
 * bounded whatever the event rate, and a reader that falls behind by more
 * than the capacity silently misses the oldest (the log and the counters keep
 * the full record; this is a live view for the console).
 *
 * A refusal one caller can repeat at will (a garbage proof, a stale token)
 * comes with a coalescing key: its repeats within the window count on the
 * record already there instead of taking new ones, so a flood of them cannot
 * push a real event out of the ring.
 */
export class SafetyEventFeed {
  private readonly ring: (SafetyEventRecord | undefined)[];
  private lastSeq = 0;
  /** The record each coalescing key counts on; at most about `capacityEvents` entries. */
  private readonly open = new Map<string, SafetyEventRecord>();

  constructor(
    readonly capacityEvents = SAFETY_EVENT_FEED_CAPACITY_EVENTS,
    private readonly now: () => Date = () => new Date(),
    readonly coalesceWindowMs = SAFETY_EVENT_COALESCE_WINDOW_MS,
  ) {
    assert.ok(Number.isSafeInteger(capacityEvents) && capacityEvents > 0, 'capacity must be > 0');
    this.ring = new Array<SafetyEventRecord | undefined>(capacityEvents);
  }

  append(event: string, fields: Record<string, unknown>, coalesceKey?: string): SafetyEventRecord {
    const now = this.now();
    const at = now.toISOString();
    const key = coalesceKey === undefined ? undefined : `${event}\u0000${coalesceKey}`;
    const open = key === undefined ? undefined : this.open.get(key);
    if (open !== undefined && this.stillOpen(open, now.getTime())) {
      open.count = (open.count ?? 1) + 1;
      open.lastAt = at;
      return open;
    }
    const record: SafetyEventRecord = { seq: ++this.lastSeq, at, event, fields };
    if (key !== undefined) {
      record.count = 1;
      record.lastAt = at;
      if (this.open.size >= this.capacityEvents) this.forgetClosed(now.getTime());
      this.open.set(key, record);
    }
    this.ring[record.seq % this.capacityEvents] = record;
    return record;
  }

  /** Still in the ring, and its window not over. */
  private stillOpen(record: SafetyEventRecord, nowMs: number): boolean {
    return (
      record.seq > this.lastSeq - this.capacityEvents &&
      nowMs - Date.parse(record.at) < this.coalesceWindowMs
    );
  }

  /** Drops the keys whose record can no longer count: each left names a record in the ring. */
  private forgetClosed(nowMs: number): void {
    for (const [key, record] of this.open) {
      if (!this.stillOpen(record, nowMs)) this.open.delete(key);
    }
  }

  /** Events with seq > `after`, oldest first, at most `limit` of them. */
  after(after: number, limit: number): SafetyEventPage {
    assert.ok(Number.isSafeInteger(after) && after >= 0, 'after must be a safe integer >= 0');
    assert.ok(Number.isSafeInteger(limit) && limit > 0, 'limit must be a positive integer');
    const oldestKept = Math.max(1, this.lastSeq - this.capacityEvents + 1);
    const first = Math.max(after + 1, oldestKept);
    const last = Math.min(this.lastSeq, first + limit - 1);
    const events: SafetyEventRecord[] = [];
    for (let seq = first; seq <= last; seq++) {
      const record = this.ring[seq % this.capacityEvents];
      assert.ok(record?.seq === seq, 'the ring lost an event it should still hold');
      events.push(record);
    }
    return { events, nextAfter: events.at(-1)?.seq ?? after };
  }
}
