import { EventFeed, type SafetyEventsPage } from './event-feed.service';

const at = (seq: number) => `2026-12-01T06:00:${String(seq % 60).padStart(2, '0')}.000Z`;

/** A service's answer: events with these seqs (each at its own second), as a ring serves them. */
const page = (seqs: number[], when = at): SafetyEventsPage => ({
  events: seqs.map((seq) => ({ seq, at: when(seq), event: 'fenced_out', fields: { n: seq } })),
  nextAfter: seqs.at(-1) ?? 0,
});

describe('EventFeed', () => {
  it('asks each service from one before its newest event and pushes only events past it', () => {
    const feed = new EventFeed(10, { listenersMax: 2, perSubjectMax: 2 });
    const pushed: unknown[] = [];
    feed.subscribe((kind, data) => kind === 'safety' && pushed.push(data), 'operator');
    expect(feed.askAfter('lock-server')).toBe(0);
    feed.accept('lock-server', page([1, 2]));
    expect(feed.askAfter('lock-server')).toBe(1);
    feed.accept('lock-server', page([2, 3]));
    feed.accept('lock-server', page([3]));
    expect(feed.cursor('lock-server')).toBe(3);
    expect(feed.askAfter('rail-proxy')).toBe(0);
    expect(pushed).toEqual(
      [1, 2, 3].map((seq) =>
        expect.objectContaining({ service: 'lock-server', seq, fields: { n: seq } }),
      ),
    );
  });

  it('keeps only the newest `capacity` events for a page that opens late', () => {
    const feed = new EventFeed(2, { listenersMax: 1, perSubjectMax: 1 });
    feed.accept('executor', page([1, 2, 3]));
    expect(feed.snapshot().events.map((e) => e.seq)).toEqual([2, 3]);
  });

  it('reads a restarted service from its first event again', () => {
    const feed = new EventFeed(10, { listenersMax: 1, perSubjectMax: 1 });
    feed.accept('executor', page([1, 2, 3, 4, 5]));
    // fewer events than before: the newest one seen is gone
    expect(feed.accept('executor', page([]))).toEqual([]);
    expect(feed.askAfter('executor')).toBe(0);
    expect(feed.accept('executor', page([1, 2])).map((e) => e.seq)).toEqual([1, 2]);
    // as many events as before, but another event sits at the cursor's seq
    expect(
      feed.accept(
        'executor',
        page([2, 3], (seq) => at(seq + 30)),
      ),
    ).toEqual([]);
    expect(feed.askAfter('executor')).toBe(0);
  });

  it('carries on past events the service dropped before the feed read them', () => {
    const feed = new EventFeed(10, { listenersMax: 1, perSubjectMax: 1 });
    feed.accept('executor', page([1, 2]));
    expect(feed.accept('executor', page([7, 8])).map((e) => e.seq)).toEqual([7, 8]);
    expect(feed.cursor('executor')).toBe(8);
  });

  it('reports a service unreachable, and reachable again, once per change', () => {
    const feed = new EventFeed(10, { listenersMax: 1, perSubjectMax: 1 });
    const statuses: unknown[] = [];
    feed.subscribe((kind, data) => kind === 'sources' && statuses.push(data), 'operator');
    feed.failed('rail-proxy', 'UNAVAILABLE: connect ECONNREFUSED');
    feed.failed('rail-proxy', 'UNAVAILABLE: connect ECONNREFUSED');
    feed.accept('rail-proxy', page([]));
    feed.accept('rail-proxy', page([]));
    expect(statuses).toEqual([
      [{ service: 'rail-proxy', reachable: false, error: 'UNAVAILABLE: connect ECONNREFUSED' }],
      [{ service: 'rail-proxy', reachable: true }],
    ]);
  });

  it('refuses listeners beyond its maximum and frees the place on unsubscribe', () => {
    const feed = new EventFeed(10, { listenersMax: 1, perSubjectMax: 1 });
    const first = () => undefined;
    expect(feed.subscribe(first, 'operator-alice')).toBe('subscribed');
    expect(feed.subscribe(() => undefined, 'operator-bob')).toBe('full');
    feed.unsubscribe(first);
    expect(feed.subscribe(() => undefined, 'operator-bob')).toBe('subscribed');
  });

  it("refuses one person's stream beyond their share, while another person still gets one", () => {
    const feed = new EventFeed(10, { listenersMax: 4, perSubjectMax: 2 });
    const mine = [() => undefined, () => undefined];
    for (const l of mine) expect(feed.subscribe(l, 'mallory')).toBe('subscribed');
    expect(feed.subscribe(() => undefined, 'mallory')).toBe('subject-full');
    expect(feed.subscribe(() => undefined, 'operator-alice')).toBe('subscribed');
    feed.unsubscribe(mine[0]);
    expect(feed.subscribe(() => undefined, 'mallory')).toBe('subscribed');
  });
});
