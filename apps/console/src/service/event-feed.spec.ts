import { EventFeed, type SafetyEventsPage } from './event-feed';

const page = (seqs: number[], nextAfter: number): SafetyEventsPage => ({
  events: seqs.map((seq) => ({
    seq,
    at: `2026-01-01T00:00:0${seq % 10}.000Z`,
    event: 'fenced_out',
    fields: { n: seq },
  })),
  nextAfter,
});

describe('EventFeed', () => {
  it('advances each service on its own cursor and pushes only events past it', () => {
    const feed = new EventFeed(10, 2);
    const pushed: unknown[] = [];
    feed.subscribe((kind, data) => kind === 'safety' && pushed.push(data));
    expect(feed.cursor('lock-server')).toBe(0);
    feed.accept('lock-server', 0, page([1, 2], 2));
    // a page repeating seq 2 (the service answered from an older cursor) adds only seq 3
    feed.accept('lock-server', 2, page([2, 3], 3));
    expect(feed.cursor('lock-server')).toBe(3);
    expect(feed.cursor('rail-proxy')).toBe(0);
    expect(pushed).toEqual(
      [1, 2, 3].map((seq) => expect.objectContaining({ service: 'lock-server', seq })),
    );
  });

  it('keeps only the newest `capacity` events for a page that opens late', () => {
    const feed = new EventFeed(2, 1);
    feed.accept('executor', 0, page([1, 2, 3], 3));
    expect(feed.snapshot().events.map((e) => e.seq)).toEqual([2, 3]);
  });

  it('starts the cursor again when a restarted service reports a lower sequence', () => {
    const feed = new EventFeed(10, 1);
    feed.accept('executor', 0, page([1, 2, 3, 4, 5], 5));
    feed.accept('executor', 5, page([], 2));
    expect(feed.cursor('executor')).toBe(0);
  });

  it('reports a service unreachable, and reachable again, once per change', () => {
    const feed = new EventFeed(10, 1);
    const statuses: unknown[] = [];
    feed.subscribe((kind, data) => kind === 'sources' && statuses.push(data));
    feed.failed('rail-proxy', 'UNAVAILABLE: connect ECONNREFUSED');
    feed.failed('rail-proxy', 'UNAVAILABLE: connect ECONNREFUSED');
    feed.accept('rail-proxy', 0, page([], 0));
    expect(statuses).toEqual([
      [{ service: 'rail-proxy', reachable: false, error: 'UNAVAILABLE: connect ECONNREFUSED' }],
      [{ service: 'rail-proxy', reachable: true }],
    ]);
  });

  it('refuses listeners beyond its maximum and frees the place on unsubscribe', () => {
    const feed = new EventFeed(10, 1);
    const first = () => undefined;
    expect(feed.subscribe(first)).toBe(true);
    expect(feed.subscribe(() => undefined)).toBe(false);
    feed.unsubscribe(first);
    expect(feed.subscribe(() => undefined)).toBe(true);
  });
});
