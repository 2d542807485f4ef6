import { FakeClock, fakeTransport, ok, route, serverAt, SID } from './fakes.testing';
import { LockClient } from './lock-client';

/**
 * `leaseCovers` / `leaseRemainingMs`: the lock's own lease as the client sees
 * it (sent-at + granted TTL × (1 − margin)), independent of the session
 * deadline. A scripted lock-server grants `grantMs` whatever was asked.
 */
async function held(opts: { askMs: number; grantMs: number; acquireTakesMs?: number }) {
  const clock = new FakeClock();
  const transport = fakeTransport(clock, (req) => {
    switch (route(req)) {
      case 'open':
        return ok(201, {
          sessionId: SID,
          ownerId: 'worker-1',
          ttlMillis: 3_000,
          expiresAt: serverAt(clock.nowMs() + 3_000),
        });
      case 'acquire':
        // The answer arrives later than the send: the lease still counts from the send.
        clock.jump(opts.acquireTakesMs ?? 0);
        return ok(200, {
          key: 'k',
          ownerId: 'worker-1',
          sessionId: SID,
          fencingToken: '7',
          acquiredAt: serverAt(0),
          grantProof: 'proof',
          expiresAt: serverAt(opts.grantMs),
        });
      default:
        return ok(204);
    }
  });
  const client = new LockClient({
    baseUrl: 'http://lock-server.test:8081',
    ownerId: 'worker-1',
    sessionTtlMs: 3_000,
    safetyMargin: 0.3,
    clock,
    transport,
  });
  const session = await client.openSession();
  const handle = await session.acquire('k', { ttlMs: opts.askMs });
  return { clock, handle, session };
}

it('the lease left is the granted TTL less the margin, counted from the send', async () => {
  const { clock, handle } = await held({ askMs: 20_000, grantMs: 20_000, acquireTakesMs: 1_000 });
  // 20 s × 0.7 = 14 s from the send; 1 s went by while the answer travelled.
  expect(handle.leaseRemainingMs()).toBe(13_000);
  expect(handle.leaseCovers(13_000)).toEqual({ ok: true, remainingMs: 13_000, requiredMs: 13_000 });
  clock.jump(1);
  expect(handle.leaseCovers(13_000)).toEqual({
    ok: false,
    remainingMs: 12_999,
    requiredMs: 13_000,
  });
});

it('a server that grants less than asked shortens the lease to what it granted', async () => {
  const { handle } = await held({ askMs: 20_000, grantMs: 10_000 });
  expect(handle.leaseRemainingMs()).toBe(7_000);
  expect(handle.leaseCovers(11_000).ok).toBe(false);
});

it('the lease is the lock’s own: it outlasts the session deadline the heartbeat keeps moving', async () => {
  const { handle, session } = await held({ askMs: 20_000, grantMs: 20_000 });
  // The session (3 s × 0.7) ends well before the lease; remainingMs() is the minimum of both.
  expect(handle.remainingMs()).toBe(2_100);
  expect(handle.leaseRemainingMs()).toBe(14_000);
  expect(session.state).toBe('open');
});

it('nothing is covered once the lock is released or its lease has passed', async () => {
  const first = await held({ askMs: 20_000, grantMs: 20_000 });
  await first.handle.release();
  expect(first.handle.leaseCovers(0)).toEqual({ ok: true, remainingMs: 0, requiredMs: 0 });
  expect(first.handle.leaseCovers(1)).toEqual({ ok: false, remainingMs: 0, requiredMs: 1 });
  const second = await held({ askMs: 20_000, grantMs: 20_000 });
  second.clock.jump(15_000);
  expect(second.handle.leaseRemainingMs()).toBe(0);
});

it('a budget that is not a finite, non-negative count of ms is a programming error', async () => {
  const { handle } = await held({ askMs: 20_000, grantMs: 20_000 });
  expect(() => handle.leaseCovers(Number.NaN)).toThrow(/budgetMs/);
  expect(() => handle.leaseCovers(-1)).toThrow(/budgetMs/);
});
