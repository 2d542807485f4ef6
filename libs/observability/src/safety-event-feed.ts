import assert from 'node:assert/strict';

/** How many recent safety events a process keeps for GET /v1/safety-events (docs/operations.md). */
export const SAFETY_EVENT_FEED_CAPACITY_EVENTS = 1000;

/** One safety event as GET /v1/safety-events serves it: what its log line carries, numbered. */
export interface SafetyEventRecord {
  /** 1 for the process's first event, then +1 per event; never reused. */
  seq: number;
  /** When it was emitted, ISO-8601 UTC with milliseconds. */
  at: string;
  event: string;
  /** The log line's fields, bigints already as decimal strings. */
  fields: Record<string, unknown>;
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
 */
export class SafetyEventFeed {
  private readonly ring: (SafetyEventRecord | undefined)[];
  private lastSeq = 0;

  constructor(
    readonly capacityEvents = SAFETY_EVENT_FEED_CAPACITY_EVENTS,
    private readonly now: () => Date = () => new Date(),
  ) {
    assert.ok(Number.isSafeInteger(capacityEvents) && capacityEvents > 0, 'capacity must be > 0');
    this.ring = new Array<SafetyEventRecord | undefined>(capacityEvents);
  }

  append(event: string, fields: Record<string, unknown>): SafetyEventRecord {
    const record: SafetyEventRecord = {
      seq: ++this.lastSeq,
      at: this.now().toISOString(),
      event,
      fields,
    };
    this.ring[record.seq % this.capacityEvents] = record;
    return record;
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
