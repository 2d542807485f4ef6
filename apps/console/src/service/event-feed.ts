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

export interface SafetyEventsPage {
  events: { seq: number; at: string; event: string; fields?: Record<string, unknown> }[];
  nextAfter: number;
}

/**
 * The pure part of the feed: per-service cursors, the newest `capacity`
 * events for a page that opens late, and the listeners (SSE streams) new
 * events go to. The poller (SafetyEventPoller) feeds it; it does no I/O.
 */
export class EventFeed {
  private readonly recent: FeedEvent[] = [];
  private readonly cursors = new Map<string, number>();
  private readonly statuses = new Map<string, SourceStatus>();
  private readonly listeners = new Set<(kind: 'safety' | 'sources', data: unknown) => void>();

  constructor(
    readonly capacity: number,
    readonly listenersMax: number,
  ) {
    assert.ok(capacity >= 1 && listenersMax >= 1);
  }

  /** The `after` to ask `service` with. */
  cursor(service: string): number {
    return this.cursors.get(service) ?? 0;
  }

  /**
   * A page read from `service` after `after`: new events are kept and pushed.
   * A `nextAfter` below the cursor means the service restarted (its sequence
   * starts again at 1), so the cursor starts again too.
   */
  accept(service: string, after: number, page: SafetyEventsPage): FeedEvent[] {
    const fresh = page.events
      .filter((e) => e.seq > after)
      .map((e) => ({ service, seq: e.seq, at: e.at, event: e.event, fields: e.fields ?? {} }));
    this.cursors.set(service, page.nextAfter < after ? 0 : Math.max(after, page.nextAfter));
    for (const e of fresh) {
      this.recent.push(e);
      if (this.recent.length > this.capacity) this.recent.shift();
      this.emit('safety', e);
    }
    this.setStatus({ service, reachable: true });
    return fresh;
  }

  failed(service: string, error: string): void {
    this.setStatus({ service, reachable: false, error });
  }

  snapshot(): { events: FeedEvent[]; sources: SourceStatus[] } {
    return { events: [...this.recent], sources: [...this.statuses.values()] };
  }

  /** Adds a listener; false when the feed already has as many as it serves. */
  subscribe(listener: (kind: 'safety' | 'sources', data: unknown) => void): boolean {
    if (this.listeners.size >= this.listenersMax) return false;
    this.listeners.add(listener);
    return true;
  }

  unsubscribe(listener: (kind: 'safety' | 'sources', data: unknown) => void): void {
    this.listeners.delete(listener);
  }

  private setStatus(next: SourceStatus): void {
    const prev = this.statuses.get(next.service);
    this.statuses.set(next.service, next);
    if (prev?.reachable !== next.reachable || prev?.error !== next.error)
      this.emit('sources', [...this.statuses.values()]);
  }

  private emit(kind: 'safety' | 'sources', data: unknown): void {
    for (const l of this.listeners) l(kind, data);
  }
}
