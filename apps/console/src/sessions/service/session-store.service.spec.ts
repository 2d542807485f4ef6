import { DlockError } from '@dlock/lock-api';
import { sameSecret, SessionStore } from './session-store.service';

const alice = { subject: 'operator-alice', token: 'a.b.c' };
const bob = { subject: 'operator-bob', token: 'd.e.f' };

describe('SessionStore', () => {
  let now = 1_000_000;
  const clock = () => now;
  beforeEach(() => (now = 1_000_000));

  it('gives each session a random id and anti-CSRF token, and ends it with its token', () => {
    const store = new SessionStore({ max: 10, perSubjectMax: 4, maxAgeMs: 3_600_000 }, clock);
    const a = store.create(alice, now + 60_000).session;
    const b = store.create(alice, now + 60_000).session;
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrfToken, b.csrfToken]).size).toBe(4);
    expect(store.get(a.id)).toMatchObject({ subject: 'operator-alice', token: 'a.b.c' });
    now += 59_999;
    expect(store.get(a.id)).toBeDefined();
    now += 1;
    expect(store.get(a.id)).toBeUndefined();
    expect(store.get(undefined)).toBeUndefined();
    expect(store.get('no-such-id')).toBeUndefined();
  });

  it('ends a session after the longest lifetime even when its token lasts longer', () => {
    const store = new SessionStore({ max: 10, perSubjectMax: 4, maxAgeMs: 60_000 }, clock);
    const s = store.create(alice, now + 3_600_000).session;
    expect(s.expiresAtMs).toBe(now + 60_000);
    // A fresher token from the proxy never takes it past that either.
    store.refresh(s, 'g.h.i', now + 7_200_000);
    expect([s.token, s.expiresAtMs]).toEqual(['g.h.i', now + 60_000]);
  });

  it('refuses one sign-in past the bound (503, nothing pushed out), and frees expired places', () => {
    const store = new SessionStore({ max: 2, perSubjectMax: 4, maxAgeMs: 3_600_000 }, clock);
    const a = store.create(alice, now + 10_000).session;
    const b = store.create(bob, now + 60_000).session;
    let refused: unknown;
    try {
      store.create(bob, now + 60_000);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DlockError);
    expect(refused).toMatchObject({
      code: 'UNAVAILABLE',
      httpStatus: 503,
      details: { reason: 'sessions-full' },
    });
    expect([store.get(a.id), store.get(b.id)].every((s) => s !== undefined)).toBe(true);
    now += 10_000;
    expect(store.create(bob, now + 60_000).session.subject).toBe('operator-bob');
    expect(store.size).toBe(2);
  });

  it("keeps one person to their share: their next sign-in ends their oldest, no one else's", () => {
    const store = new SessionStore({ max: 4, perSubjectMax: 2, maxAgeMs: 3_600_000 }, clock);
    const bobs = store.create(bob, now + 60_000).session;
    const first = store.create(alice, now + 60_000).session;
    const second = store.create(alice, now + 60_000).session;
    const third = store.create(alice, now + 60_000);
    expect(third.ended.map((s) => s.id)).toEqual([first.id]);
    expect(store.get(first.id)).toBeUndefined();
    for (const s of [bobs, second, third.session]) expect(store.get(s.id)).toBeDefined();
    // However often one person signs in, the store keeps room for the others.
    for (let i = 0; i < 100; i++) store.create(alice, now + 60_000);
    expect(store.size).toBe(3);
    expect(store.create(bob, now + 60_000).ended).toEqual([]);
  });

  it('a new sign-in in the same browser replaces its old session; sign-out ends one', () => {
    const store = new SessionStore({ max: 1, perSubjectMax: 4, maxAgeMs: 3_600_000 }, clock);
    const first = store.create(alice, now + 60_000).session;
    const second = store.create(bob, now + 60_000, first.id).session;
    expect(store.get(first.id)).toBeUndefined();
    store.delete(second.id);
    expect(store.get(second.id)).toBeUndefined();
    expect(store.size).toBe(0);
  });
});

describe('sameSecret', () => {
  it('is true only for the same string', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abc', 'abd')).toBe(false);
    expect(sameSecret('abc', 'abcd')).toBe(false);
    expect(sameSecret('', 'a')).toBe(false);
  });
});
