import { LockLostError } from '@dlock/lock-api';
import {
  envelope,
  FakeClock,
  fakeTransport,
  ok,
  route,
  serverAt,
  SID,
  unreachable,
  type FakeReply,
  type RecordedRequest,
} from './fakes.testing';
import { LockClient } from './lock-client';

/**
 * Acquiring a key again on the same session (docs/lock-client.md): the lock-server answers a
 * same-session acquire of a key it still holds with that grant and its old lease, and a
 * release names only the grant's token. The scripted server below keeps one grant per key
 * as the real stores do; a test decides what the network does to each message.
 */
interface Grant {
  token: bigint;
  acquiredAtMs: number;
  ttlMs: number;
}

function world() {
  const clock = new FakeClock();
  const grants = new Map<string, Grant>();
  let nextToken = 1n;
  const live = (g: Grant | undefined) =>
    g !== undefined && g.acquiredAtMs + g.ttlMs > clock.nowMs();
  const server = {
    grants,
    acquire(key: string, ttlMs: number) {
      let g = grants.get(key);
      if (!live(g))
        grants.set(key, (g = { token: nextToken++, acquiredAtMs: clock.nowMs(), ttlMs }));
      return ok(200, {
        key,
        ownerId: 'worker-1',
        sessionId: SID,
        fencingToken: g!.token.toString(),
        acquiredAt: serverAt(g!.acquiredAtMs),
        expiresAt: serverAt(g!.acquiredAtMs + g!.ttlMs),
        grantProof: 'proof',
      });
    },
    /** Compare-and-delete on (key, token), as L6 is. */
    release(key: string, token: bigint) {
      const g = grants.get(key);
      if (!live(g) || g!.token !== token) return envelope('LOCK_LOST');
      grants.delete(key);
      return ok(204);
    },
  };
  /** Per call: undefined lets the server answer at once. */
  let network: (req: RecordedRequest, answer: () => FakeReply) => FakeReply = (_r, a) => a();
  const transport = fakeTransport(clock, (req) =>
    network(req, () => {
      const key = req.url.pathname.split('/')[3] ?? '';
      switch (route(req)) {
        case 'open':
          return ok(201, {
            sessionId: SID,
            ownerId: 'worker-1',
            ttlMillis: 60_000,
            expiresAt: serverAt(clock.nowMs() + 60_000),
          });
        case 'heartbeat':
          return ok(200, {
            sessionId: SID,
            expiresAt: serverAt(clock.nowMs() + 60_000),
            serverTime: serverAt(clock.nowMs()),
            heldLockCount: grants.size,
          });
        case 'acquire':
          return server.acquire(key, Number(req.json.ttlMillis));
        case 'release':
          return server.release(key, BigInt(String(req.headers['x-fencing-token'])));
        default:
          return ok(204);
      }
    }),
  );
  const client = new LockClient({
    baseUrl: 'http://lock-server.test:8081',
    ownerId: 'worker-1',
    sessionTtlMs: 60_000,
    safetyMargin: 0.3,
    clock,
    transport,
  });
  return {
    clock,
    server,
    transport,
    client,
    setNetwork: (n: typeof network) => (network = n),
  };
}

const routes = (reqs: RecordedRequest[]) => reqs.map((r) => route(r));

it('a release whose answer was lost is settled before the key is acquired again', async () => {
  const w = world();
  const session = await w.client.openSession();
  const first = await session.acquire('k', { ttlMs: 10_000 });
  // The DELETE is still travelling when its caller gives up: the server acts on it later.
  let late: (() => FakeReply) | undefined;
  w.setNetwork((req, answer) => {
    if (route(req) !== 'release' || late) return answer();
    late = answer;
    return unreachable('response');
  });
  await expect(first.release()).resolves.toBe(false);
  const second = await session.acquire('k', { ttlMs: 10_000 });
  // One more DELETE of the old grant went out first, so the server minted a new one.
  expect(routes(w.transport.requests).slice(-3)).toEqual(['release', 'release', 'acquire']);
  expect(second.fencingToken).toBe(first.fencingToken + 1n);
  // The old DELETE lands now: it names the old token and frees nothing.
  expect(late!()).toMatchObject({ status: 409 });
  expect(w.server.grants.get('k')?.token).toBe(second.fencingToken);
  expect(() => second.checkStillHeld()).not.toThrow();
});

it('an acquire that cannot settle the earlier release sends no acquire and is retried', async () => {
  const w = world();
  const session = await w.client.openSession();
  const first = await session.acquire('k', { ttlMs: 10_000 });
  let releases = 0;
  w.setNetwork((req, answer) => {
    if (route(req) !== 'release') return answer();
    releases++;
    // The release and the first settling DELETE get no answer; the next one does.
    return releases <= 2 ? unreachable('response') : answer();
  });
  await first.release();
  const second = await w.clock.settle(session.acquire('k', { ttlMs: 10_000 }));
  expect(routes(w.transport.requests).slice(-4)).toEqual([
    'release',
    'release',
    'release',
    'acquire',
  ]);
  // The grant may be gone or not: the third DELETE settled it, so the token is new.
  expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
});

it('a release confirmed by its own answer costs the next acquire nothing', async () => {
  const w = world();
  const session = await w.client.openSession();
  const first = await session.acquire('k', { ttlMs: 10_000 });
  await expect(first.release()).resolves.toBe(true);
  await session.acquire('k', { ttlMs: 10_000 });
  expect(routes(w.transport.requests).slice(-2)).toEqual(['release', 'acquire']);
});

it('an old grant answered again keeps its old lease, never one counted from the new send', async () => {
  const w = world();
  const session = await w.client.openSession();
  const first = await session.acquire('k', { ttlMs: 10_000 });
  // Its lease lapses locally (7 s of 10 s); the server still holds it for 3 s more.
  await w.clock.advance(7_000);
  expect(() => first.checkStillHeld()).toThrow(LockLostError);
  const again = await session.acquire('k', { ttlMs: 10_000 });
  expect(again.fencingToken).toBe(first.fencingToken);
  // Counted from this send it would run to 14 s, past the server's expiry at 10 s.
  expect(again.leaseRemainingMs()).toBe(0);
  expect(() => again.checkStillHeld()).toThrow(LockLostError);
});

it('after an acquire with no answer, the next grant counts its lease from that earlier send', async () => {
  const w = world();
  const session = await w.client.openSession();
  w.setNetwork((req, answer) => {
    if (route(req) !== 'acquire' || w.server.grants.size > 0) return answer();
    // Granted at 0 ms; the answer never arrives and the caller gives up at 2.5 s.
    void answer();
    w.clock.jump(2_500);
    return unreachable('response');
  });
  await expect(session.acquire('k', { ttlMs: 10_000 })).rejects.toMatchObject({
    code: 'UNAVAILABLE',
  });
  const handle = await session.acquire('k', { ttlMs: 10_000 });
  // The server's lease started at 0 ms: 7 s from there, not from 2.5 s.
  expect(handle.leaseRemainingMs()).toBe(4_500);
});
