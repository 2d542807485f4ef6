import assert from 'node:assert/strict';

/** One safety event as a service reports it (GET /v1/safety-events), tagged with its service. */
export interface FeedEvent {
  service: string;
  seq: number;
  at: string;
  event: string;
  fields: Record<string, unknown>;
}

/** Whether the feed could read a service on its last poll. */
export interface SourceStatus {
  service: string;
  reachable: boolean;
  /** The last failure, `CODE: message`, while unreachable. */
  error?: string;
}

type WireEvent = SafetyEventsPage['events'][number];

/**
 * Whether a page asked from one before `last` comes from the same process:
 * it starts with `last` itself, or past it (the service's ring dropped
 * events the feed never read). Anything else is a restarted service.
 */
function continues(last: FeedEvent, first: WireEvent | undefined): boolean {
  if (first === undefined) return false;
  if (first.seq > last.seq) return true;
  return first.seq === last.seq && first.at === last.at && first.event === last.event;
}

/** One open stream: it is handed every new event and every change of the badges. */
export type Listener = (kind: 'safety' | 'sources', data: unknown) => void;

export interface SafetyEventsPage {
  events: { seq: number; at: string; event: string; fields?: Record<string, unknown> }[];
  nextAfter: number;
}

/**
 * The pure part of the feed: per-service cursors (the newest event read), the newest `capacity`
 * events for a page that opens late, and the listeners (SSE streams) new
 * events go to. The poller (SafetyEventPoller) feeds it; it does no I/O.
 */
export class EventFeed {
  private readonly recent: FeedEvent[] = [];
  private readonly lastSeen = new Map<string, FeedEvent>();
  private readonly statuses = new Map<string, SourceStatus>();
  /** Each open stream, and the person it streams to. */
  private readonly listeners = new Map<Listener, string>();

  constructor(
    readonly capacity: number,
    readonly limits: { listenersMax: number; perSubjectMax: number },
  ) {
    assert.ok(capacity >= 1 && limits.listenersMax >= 1 && limits.perSubjectMax >= 1);
  }

  /** Newest seq read from `service`; 0 before the first event. */
  cursor(service: string): number {
    return this.lastSeen.get(service)?.seq ?? 0;
  }

  /**
   * The `after` to ask `service` with: one before the cursor, so the page
   * starts with the newest event already seen, unless the service restarted
   * (its sequence starts again at 1) and that event is gone (accept()).
   */
  askAfter(service: string): number {
    return Math.max(0, this.cursor(service) - 1);
  }

  /** A page read with askAfter(service): new events are kept and pushed. */
  accept(service: string, page: SafetyEventsPage): FeedEvent[] {
    this.setStatus({ service, reachable: true });
    const last = this.lastSeen.get(service);
    if (last !== undefined && !continues(last, page.events[0])) {
      // Another process answers now: read it from its first event on the next poll.
      this.lastSeen.delete(service);
      return [];
    }
    const fresh = page.events
      .filter((e) => e.seq > (last?.seq ?? 0))
      .map((e) => ({ service, seq: e.seq, at: e.at, event: e.event, fields: e.fields ?? {} }));
    for (const e of fresh) {
      this.recent.push(e);
      if (this.recent.length > this.capacity) this.recent.shift();
      this.emit('safety', e);
    }
    const newest = fresh.at(-1);
    if (newest !== undefined) this.lastSeen.set(service, newest);
    return fresh;
  }

  failed(service: string, error: string): void {
    this.setStatus({ service, reachable: false, error });
  }

  snapshot(): { events: FeedEvent[]; sources: SourceStatus[] } {
    return { events: [...this.recent], sources: [...this.statuses.values()] };
  }

  /**
   * Adds `subject`'s listener, or says why not: the feed serves as many as it
   * may, or this person has their share already (one identity cannot take
   * every stream, docs/console.md).
   */
  subscribe(listener: Listener, subject: string): 'subscribed' | 'full' | 'subject-full' {
    if (this.listeners.size >= this.limits.listenersMax) return 'full';
    let theirs = 0;
    for (const s of this.listeners.values()) if (s === subject) theirs += 1;
    if (theirs >= this.limits.perSubjectMax) return 'subject-full';
    this.listeners.set(listener, subject);
    return 'subscribed';
  }

  unsubscribe(listener: Listener): void {
    this.listeners.delete(listener);
  }

  private setStatus(next: SourceStatus): void {
    const prev = this.statuses.get(next.service);
    this.statuses.set(next.service, next);
    if (prev?.reachable !== next.reachable || prev?.error !== next.error)
      this.emit('sources', [...this.statuses.values()]);
  }

  private emit(kind: 'safety' | 'sources', data: unknown): void {
    for (const l of this.listeners.keys()) l(kind, data);
  }
}
