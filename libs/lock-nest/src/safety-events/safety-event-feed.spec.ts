import { Registry } from 'prom-client';
import { Logger } from '@nestjs/common';
import { SAFETY_EVENT_FEED_CAPACITY_EVENTS, SafetyEventFeed } from './safety-event-feed';
import { registerSafetyEvents, SafetyEvents, type SafetyEventLogStyle } from './safety-events';

const AT = new Date('2026-12-01T06:00:00.000Z');

function feedWith(count: number, capacity = 4): SafetyEventFeed {
  const feed = new SafetyEventFeed(capacity, () => AT);
  for (let i = 1; i <= count; i++) feed.append('fenced_out', { n: i });
  return feed;
}

const seqs = (feed: SafetyEventFeed, after: number, limit: number) =>
  feed.after(after, limit).events.map((e) => e.seq);

describe('SafetyEventFeed', () => {
  it('numbers events from 1 and serves them oldest first with their time and fields', () => {
    const feed = feedWith(2);
    expect(feed.after(0, 10)).toEqual({
      events: [
        { seq: 1, at: '2026-12-01T06:00:00.000Z', event: 'fenced_out', fields: { n: 1 } },
        { seq: 2, at: '2026-12-01T06:00:00.000Z', event: 'fenced_out', fields: { n: 2 } },
      ],
      nextAfter: 2,
    });
  });

  it('serves only events after the cursor, at most limit, and nextAfter continues from there', () => {
    const feed = feedWith(4);
    expect(feed.after(1, 2)).toMatchObject({ nextAfter: 3 });
    expect(seqs(feed, 1, 2)).toEqual([2, 3]);
    expect(seqs(feed, 3, 2)).toEqual([4]);
  });

  it('keeps the newest `capacity` events after wrapping around, and skips a reader past the oldest', () => {
    const feed = feedWith(10);
    expect(seqs(feed, 0, 100)).toEqual([7, 8, 9, 10]);
    expect(seqs(feed, 5, 100)).toEqual([7, 8, 9, 10]);
    expect(seqs(feed, 8, 100)).toEqual([9, 10]);
    expect(feed.after(0, 100).events.map((e) => e.fields)).toEqual([
      { n: 7 },
      { n: 8 },
      { n: 9 },
      { n: 10 },
    ]);
  });

  it('answers an empty page with nextAfter = after when the cursor is at or beyond the head', () => {
    const feed = feedWith(3);
    expect(feed.after(3, 10)).toEqual({ events: [], nextAfter: 3 });
    expect(feed.after(99, 10)).toEqual({ events: [], nextAfter: 99 });
    expect(new SafetyEventFeed().after(0, 10)).toEqual({ events: [], nextAfter: 0 });
  });

  it('holds 1000 events by default', () => {
    expect(SAFETY_EVENT_FEED_CAPACITY_EVENTS).toBe(1000);
    const feed = new SafetyEventFeed();
    for (let i = 0; i < 1500; i++) feed.append('lock_revoked', {});
    const page = feed.after(0, 500);
    expect(page.events[0].seq).toBe(501);
    expect(page.nextAfter).toBe(1000);
    expect(seqs(feed, 1000, 500)).toHaveLength(500);
  });
});

describe('SafetyEventFeed coalescing', () => {
  let nowMs = AT.getTime();
  const clock = () => new Date(nowMs);
  beforeEach(() => {
    nowMs = AT.getTime();
  });

  it('counts the repeats of one refusal on its record: a flood keeps a real event in the ring', () => {
    const feed = new SafetyEventFeed(4, clock, 60_000);
    feed.append('fenced_out', { real: true }, 'holder-1');
    for (let i = 0; i < 1200; i++) {
      nowMs += 10;
      feed.append('proof_rejected', { n: i }, 'attacker');
    }
    expect(feed.after(0, 10)).toEqual({
      events: [
        {
          seq: 1,
          at: AT.toISOString(),
          event: 'fenced_out',
          fields: { real: true },
          count: 1,
          lastAt: AT.toISOString(),
        },
        {
          seq: 2,
          at: new Date(AT.getTime() + 10).toISOString(),
          event: 'proof_rejected',
          fields: { n: 0 },
          count: 1200,
          lastAt: new Date(nowMs).toISOString(),
        },
      ],
      nextAfter: 2,
    });
  });

  it('keeps apart other keys, other events and uncoalesced events', () => {
    const feed = new SafetyEventFeed(10, clock, 60_000);
    feed.append('proof_rejected', {}, 'a');
    feed.append('proof_rejected', {}, 'b');
    feed.append('fenced_out', {}, 'a');
    feed.append('lock_revoked', {});
    feed.append('lock_revoked', {});
    feed.append('proof_rejected', {}, 'a');
    expect(feed.after(0, 10).events.map((e) => [e.event, e.count])).toEqual([
      ['proof_rejected', 2],
      ['proof_rejected', 1],
      ['fenced_out', 1],
      ['lock_revoked', undefined],
      ['lock_revoked', undefined],
    ]);
  });

  it('opens a new record once the window is over, or once its record left the ring', () => {
    const feed = new SafetyEventFeed(2, clock, 60_000);
    feed.append('proof_rejected', {}, 'a');
    nowMs += 60_000;
    feed.append('proof_rejected', {}, 'a');
    expect(feed.after(0, 10).events.map((e) => [e.seq, e.count])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    feed.append('lock_revoked', {});
    feed.append('lock_revoked', {});
    feed.append('proof_rejected', {}, 'a');
    expect(feed.after(0, 10).events.map((e) => [e.seq, e.count])).toEqual([
      [4, undefined],
      [5, 1],
    ]);
  });
});

describe('SafetyEvents feeds its ring', () => {
  it('appends every emitted event with the log line fields, bigints as decimal strings', () => {
    const feed = new SafetyEventFeed(10, () => AT);
    const safety = new SafetyEvents(new Registry(), feed);
    safety.fencedOut({
      resource: 'account',
      resourceId: 'acc-1',
      presentedToken: 9007199254740993n,
      highestToken: 42n,
      ownerId: 'w-1',
    });
    safety.lockRevoked({ key: 'payout:acc-1', revokedToken: 7n });
    expect(feed.after(0, 10).events).toEqual([
      {
        seq: 1,
        at: '2026-12-01T06:00:00.000Z',
        event: 'fenced_out',
        fields: {
          resource: 'account',
          resourceId: 'acc-1',
          presentedToken: '9007199254740993',
          highestToken: '42',
          ownerId: 'w-1',
        },
        count: 1,
        lastAt: '2026-12-01T06:00:00.000Z',
      },
      {
        seq: 2,
        at: '2026-12-01T06:00:00.000Z',
        event: 'lock_revoked',
        fields: { key: 'payout:acc-1', revokedToken: '7' },
      },
    ]);
  });
});

/** A team's own events, registered as its module would (docs/extending.md). */
const REFUND_EVENTS = [
  {
    event: 'refund_refused',
    message: 'refund refused',
    metric: 'refund_refused_total',
    help: 'Refunds a guard refused',
    coalesceBy: ['refundId'],
  },
  ...['too_late', 'too_much'].map((why) => ({
    event: `refund_${why}`,
    message: 'refund out of bounds',
    metric: 'refund_out_of_bounds_total',
    help: 'Refunds out of their bounds',
    fixedLabels: { why },
  })),
];

describe('SafetyEvents log lines', () => {
  /** What each style hands the Nest logger for one event whose fields include an `event`. */
  function loggedAs(style: SafetyEventLogStyle): unknown[][] {
    registerSafetyEvents(REFUND_EVENTS);
    const calls: unknown[][] = [];
    const warn = jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((...args: unknown[]) => void calls.push(args));
    try {
      const safety = new SafetyEvents(new Registry(), new SafetyEventFeed(10, () => AT), style);
      safety.record('refund_refused', { refundId: 'r-1', token: 7n, event: 'SEND' });
    } finally {
      warn.mockRestore();
    }
    return calls;
  }

  it('for pino: the fields are the line’s own, the safety event in `event` even when a field has that name', () => {
    expect(loggedAs('fields')).toEqual([
      [{ refundId: 'r-1', token: '7', event: 'refund_refused' }, 'refund refused'],
    ]);
  });

  it("for Nest's console logger (the default): one line, the message, `event=`, then the fields", () => {
    expect(loggedAs('line')).toEqual([
      ['refund refused event=refund_refused refundId=r-1 token=7 sdkEvent=SEND'],
    ]);
  });
});

describe("an app's own safety events", () => {
  const quiet = () => jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  afterEach(() => jest.restoreAllMocks());

  it('count on their metric from 0, and repeats coalesce in the feed', async () => {
    registerSafetyEvents(REFUND_EVENTS);
    quiet();
    const registry = new Registry();
    const feed = new SafetyEventFeed(10, () => AT);
    const safety = new SafetyEvents(registry, feed);
    const text0 = await registry.metrics();
    expect(text0).toContain('refund_refused_total 0');
    expect(text0).toContain('refund_out_of_bounds_total{why="too_late"} 0');
    safety.record('refund_refused', { refundId: 'r-1' });
    safety.record('refund_refused', { refundId: 'r-1' });
    safety.record('refund_too_much', { refundId: 'r-2' });
    const text = await registry.metrics();
    expect(text).toContain('refund_refused_total 2');
    expect(text).toContain('refund_out_of_bounds_total{why="too_much"} 1');
    expect(feed.after(0, 10).events.map((e) => [e.event, e.count])).toEqual([
      ['refund_refused', 2],
      ['refund_too_much', undefined],
    ]);
  });

  it('an unregistered event is a clear error, never an uncounted log line', () => {
    const safety = new SafetyEvents(new Registry());
    expect(() => safety.record('refund_lost', { refundId: 'r-1' })).toThrow(
      /refund_lost was never registered/,
    );
  });

  it('registering again means the same, or throws', () => {
    registerSafetyEvents(REFUND_EVENTS);
    expect(() =>
      registerSafetyEvents([{ ...REFUND_EVENTS[0], metric: 'refunds_refused_total' }]),
    ).toThrow(/refund_refused is already registered/);
    expect(() =>
      registerSafetyEvents([{ ...REFUND_EVENTS[0], event: 'refund_other', help: 'other' }]),
    ).toThrow(/refund_refused_total is already registered/);
    expect(() => registerSafetyEvents([{ ...REFUND_EVENTS[0], event: 'fenced_out' }])).toThrow(
      /built in/,
    );
  });
});
