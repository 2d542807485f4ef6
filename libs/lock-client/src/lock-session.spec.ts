import {
  ContentionError,
  DlockError,
  FencedOutError,
  LockLostError,
  SessionLostError,
} from '@dlock/lock-api';
import { ProtocolError } from './errors';
import {
  FakeClock,
  envelope,
  fakeTransport,
  flush,
  ok,
  serverAt,
  unreachable,
  type FakeReply,
  type RecordedRequest,
  SID,
  route,
  type Route,
} from './fakes.testing';
import { LockClient } from './lock-client';
import { HEARTBEAT_TRIES, type LockClientOptions, type SessionLostFields } from './options';

/**
 * A scripted lock-server: a well-behaved default for each route, overridable
 * per test. Server instants come from a fixed epoch plus the fake clock.
 */
function setup(options: Partial<LockClientOptions> = {}) {
  const clock = new FakeClock();
  const safety: SessionLostFields[] = [];
  let nextToken = 41n;
  const overrides: Partial<Record<Route, (req: RecordedRequest) => FakeReply>> = {};
  const defaults: Record<Route, (req: RecordedRequest) => FakeReply> = {
    open: (req) =>
      ok(201, {
        sessionId: SID,
        ownerId: req.headers['x-owner-id'],
        ttlMillis: req.json.ttlMillis,
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    heartbeat: () =>
      ok(200, {
        sessionId: SID,
        expiresAt: serverAt(clock.nowMs() + 3_000),
        serverTime: serverAt(clock.nowMs()),
        heldLockCount: 0,
      }),
    close: () => ok(204),
    acquire: (req) =>
      ok(200, {
        key: decodeURIComponent(req.url.pathname.split('/')[3]),
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: String(++nextToken),
        acquiredAt: serverAt(clock.nowMs()),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    renew: (req) =>
      ok(200, {
        key: decodeURIComponent(req.url.pathname.split('/')[3]),
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: req.headers['x-fencing-token'],
        acquiredAt: serverAt(0),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + (req.json.ttlMillis ?? 2_000)),
      }),
    release: () => ok(204),
  };
  const transport = fakeTransport(clock, (req) =>
    (overrides[route(req)] ?? defaults[route(req)])(req),
  );
  const client = new LockClient({
    baseUrl: 'http://lock-server.test:8081',
    ownerId: 'worker-1',
    sessionTtlMs: 3_000,
    lockTtlMs: 2_000,
    clock,
    transport,
    random: () => 0.5,
    events: { onSafetyEvent: (_event, fields) => void safety.push(fields) },
    ...options,
  });
  const sent = (r: Route) => transport.requests.filter((req) => route(req) === r);
  return { clock, client, transport, overrides, safety, sent };
}

/** Like a real read timeout: the call fails after its read budget on the fake clock. */
function hang(clock: FakeClock) {
  return (req: RecordedRequest) =>
    new Promise<never>((_resolve, reject) =>
      clock.setTimer(() => reject(unreachable('response')), req.readTimeoutMs),
    );
}

describe('extra headers (a delegating caller, docs/security.md)', () => {
  it('go on every call, asked for each time; owner and token stay the client’s own', async () => {
    let asked = 0;
    const { client, transport } = setup({
      token: () => 'h.p.s',
      headers: () => ({ 'x-acting-for': `person-${++asked}`, 'x-owner-id': 'someone-else' }),
    });
    const session = await client.openSession();
    const handle = await session.acquire('payout:a');
    await handle.release();
    await session.close();
    expect(transport.requests.map((r) => r.headers['x-acting-for'])).toEqual([
      'person-1',
      'person-2',
      'person-3',
      'person-4',
    ]);
    for (const r of transport.requests) {
      expect(r.headers['x-owner-id']).toBe('worker-1');
      expect(r.headers.authorization).toBe('Bearer h.p.s');
    }
  });

  it('must be a function', () => {
    expect(() =>
      setup({ headers: { 'x-acting-for': 'p' } as unknown as LockClientOptions['headers'] }),
    ).toThrow('lock-client headers must be a function');
  });
});

describe('LockSession: opening and heartbeats', () => {
  it('opens with L1 and sets the deadline to send time + ttl * (1 - margin)', async () => {
    const { clock, client, sent } = setup();
    clock.jump(1_000);
    const session = await client.openSession();
    const [open] = sent('open');
    expect(open.json).toEqual({ ownerId: 'worker-1', ttlMillis: 3_000 });
    expect(open.headers['x-owner-id']).toBe('worker-1');
    expect(open.connectTimeoutMs).toBe(500);
    expect(session.sessionId).toBe(SID);
    expect(session.deadline).toBeCloseTo(1_000 + 2_100, 9);
    expect(session.remainingMs()).toBeCloseTo(2_100, 9);
  });

  it('heartbeats every third of the TTL with the 300 ms / 1 s budget and extends from each send time', async () => {
    const { clock, client, sent } = setup();
    const session = await client.openSession();
    await clock.advance(999);
    expect(sent('heartbeat')).toHaveLength(0);
    await clock.advance(1);
    const [beat] = sent('heartbeat');
    expect(beat.sentAtMs).toBe(1_000);
    expect(beat.headers['x-owner-id']).toBe('worker-1');
    expect([beat.connectTimeoutMs, beat.readTimeoutMs]).toEqual([300, 1_000]);
    expect(session.deadline).toBeCloseTo(1_000 + 2_100, 9);
    await clock.advance(9_000);
    expect(sent('heartbeat').map((r) => r.sentAtMs)).toEqual([
      1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000, 10_000,
    ]);
    expect(session.state).toBe('open');
  });

  it('a heartbeat that cannot connect is tried once more inside the same third', async () => {
    const { clock, client, sent, overrides } = setup({ sessionTtlMs: 1_500 });
    const session = await client.openSession();
    let calls = 0;
    overrides.heartbeat = () => {
      calls++;
      if (calls === 1) {
        // Pretend the connect attempt burned its whole 300 ms.
        clock.jump(300);
        return unreachable('connect');
      }
      return ok(200, {
        sessionId: SID,
        expiresAt: serverAt(clock.nowMs() + 1_500),
        serverTime: serverAt(clock.nowMs()),
        heldLockCount: 0,
      });
    };
    await clock.advance(500);
    const beats = sent('heartbeat');
    expect(beats.map((r) => r.sentAtMs)).toEqual([500, 800]);
    // Budgets are trimmed to what is left of the 500 ms round.
    expect(beats.map((r) => r.readTimeoutMs)).toEqual([500, 200]);
    expect(session.deadline).toBeCloseTo(800 + 1_050, 9);
  });

  it('gives a round no more than 3 tries (2 retries, docs/contract.md, "Retry counts")', async () => {
    const { clock, client, sent, overrides } = setup();
    await client.openSession();
    overrides.heartbeat = () => unreachable('connect');
    await clock.advance(1_000);
    expect(HEARTBEAT_TRIES).toBe(3);
    expect(sent('heartbeat')).toHaveLength(3);
  });
});

describe('LockSession: loss detection', () => {
  it('heartbeats that never answer: the session and its locks are lost at the local deadline, before the server expiry', async () => {
    const { clock, client, sent, overrides, safety } = setup();
    const session = await client.openSession();
    const lock = await session.tryAcquire('payout:acc-1', { ttlMs: 10_000 });
    expect(lock).not.toBeNull();
    overrides.heartbeat = hang(clock);
    const sessionLost: SessionLostError[] = [];
    const lockLost: { at: number; err: LockLostError }[] = [];
    session.onLost((err) => sessionLost.push(err));
    lock!.onLockLost((err) => lockLost.push({ at: clock.nowMs(), err }));

    await clock.advance(2_099);
    expect(() => lock!.checkStillHeld()).not.toThrow();
    expect(lock!.signal.aborted).toBe(false);
    await clock.advance(1);
    // The server would keep the session until at least 3 000 ms after the open was sent.
    expect(lockLost.map((l) => l.at)).toEqual([2_100]);
    expect(lockLost[0].err).toBeInstanceOf(LockLostError);
    expect(lockLost[0].err.details).toMatchObject({
      key: 'payout:acc-1',
      reason: 'session_deadline',
    });
    expect(sessionLost).toHaveLength(1);
    expect(session.state).toBe('lost');
    expect(lock!.signal.aborted).toBe(true);
    expect(lock!.signal.reason).toBe(lockLost[0].err);
    expect(() => lock!.checkStillHeld()).toThrow(LockLostError);
    expect(lock!.remainingMs()).toBe(0);
    expect(safety).toEqual([
      {
        reason: 'session_deadline',
        scope: 'session',
        ownerId: 'worker-1',
        sessionId: SID,
        lostLockCount: 1,
      },
    ]);
    // The locks may still be held server-side for the margin: free them early if reachable.
    await flush();
    expect(sent('close')).toHaveLength(1);
    await expect(session.tryAcquire('payout:acc-2')).rejects.toBeInstanceOf(SessionLostError);
  });

  it.each([
    ['SESSION_EXPIRED', 'session_expired'],
    ['SESSION_UNKNOWN', 'session_unknown'],
  ] as const)('a heartbeat answering %s loses the session at once', async (code, reason) => {
    const { clock, client, sent, overrides, safety } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k1'))!;
    overrides.heartbeat = () => envelope(code);
    const errors: SessionLostError[] = [];
    session.onLost((e) => errors.push(e));
    await clock.advance(1_000);
    expect(session.state).toBe('lost');
    expect(errors[0].code).toBe(code);
    expect(errors[0].details).toMatchObject({ reason });
    expect(() => lock.checkStillHeld()).toThrow(LockLostError);
    expect(safety).toMatchObject([{ reason, scope: 'session', lostLockCount: 1 }]);
    // The server already forgot the session: nothing to close or release.
    expect(await lock.release()).toBe(false);
    await session.close();
    expect(sent('close')).toHaveLength(0);
    expect(sent('release')).toHaveLength(0);
  });

  it('a lock deadline is the earlier of its own lease and the session', async () => {
    const { clock, client, safety } = setup();
    const session = await client.openSession();
    clock.jump(100);
    const short = (await session.tryAcquire('short', { ttlMs: 1_000 }))!;
    const long = (await session.tryAcquire('long', { ttlMs: 60_000 }))!;
    expect(short.deadline).toBeCloseTo(100 + 700, 9);
    expect(long.deadline).toBeCloseTo(session.deadline, 9);
    expect(long.deadline).toBeCloseTo(2_100, 9);
    const lost: string[] = [];
    short.onLockLost((e) => lost.push(String(e.details?.reason)));
    await clock.advance(700);
    expect(lost).toEqual(['lock_deadline']);
    expect(safety).toMatchObject([
      { reason: 'lock_deadline', scope: 'lock', key: 'short', lostLockCount: 1 },
    ]);
    // The session and the other lock carry on; heartbeats move the long lock's deadline.
    expect(session.state).toBe('open');
    await clock.advance(300);
    expect(long.deadline).toBeCloseTo(1_000 + 2_100, 9);
    expect(() => long.checkStillHeld()).not.toThrow();
  });

  it('checkStillHeld trusts the clock, not the timer: a blocked event loop still reads as lost', async () => {
    const { clock, client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 1_000 }))!;
    const fired: string[] = [];
    lock.onLockLost((e) => fired.push(String(e.details?.reason)));
    clock.jump(699);
    expect(() => lock.checkStillHeld()).not.toThrow();
    clock.jump(1);
    expect(() => lock.checkStillHeld()).toThrow(LockLostError);
    expect(fired).toEqual(['lock_deadline']);
    expect(lock.signal.aborted).toBe(true);

    clock.jump(5_000); // now far past the session deadline too, no timer has run
    const other = setup();
    const s2 = await other.client.openSession();
    const l2 = (await s2.tryAcquire('k', { ttlMs: 60_000 }))!;
    other.clock.jump(2_100);
    expect(() => l2.checkStillHeld()).toThrow(LockLostError);
    expect(s2.state).toBe('lost');
  });

  it('a listener added after the loss still fires, and a throwing listener does not stop the others', async () => {
    const { clock, client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 1_000 }))!;
    const seen: string[] = [];
    lock.onLockLost(() => {
      throw new Error('bad listener');
    });
    lock.onLockLost(() => seen.push('second'));
    await clock.advance(700);
    lock.onLockLost(() => seen.push('late'));
    await flush();
    expect(seen).toEqual(['second', 'late']);
  });
});

describe('LockHandle: renew and release', () => {
  it('renew sends the handle token and extends the lease from the renew send time', async () => {
    const { clock, client, sent } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('payout:1', { ttlMs: 2_000 }))!;
    expect(lock.fencingToken).toBe(42n);
    await clock.advance(1_000);
    await lock.renew();
    const [renew] = sent('renew');
    expect(renew.headers['x-fencing-token']).toBe('42');
    expect(renew.json).toEqual({ sessionId: SID, ttlMillis: 2_000 });
    expect([renew.connectTimeoutMs, renew.readTimeoutMs]).toEqual([500, 2_000]);
    expect(lock.deadline).toBeCloseTo(1_000 + 1_400, 9);
    expect(lock.fencingToken).toBe(42n);
  });

  it('renew with a shorter TTL shortens the local deadline as the server shortens the lease', async () => {
    const { clock, client } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 10_000 }))!;
    expect(lock.deadline).toBeCloseTo(7_000, 9);
    await clock.advance(100);
    await lock.renew({ ttlMs: 1_000 });
    expect(lock.deadline).toBeCloseTo(100 + 700, 9);
    await clock.advance(700);
    expect(lock.state).toBe('lost');
  });

  it('renew answering LOCK_LOST: throws, fires onLockLost and the safety event, no retry', async () => {
    const { client, sent, overrides, safety } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    overrides.renew = () => envelope('LOCK_LOST', { details: { storedToken: '77' } });
    const lost: LockLostError[] = [];
    lock.onLockLost((e) => lost.push(e));
    await expect(lock.renew()).rejects.toMatchObject({ code: 'LOCK_LOST', retrySafe: false });
    expect(sent('renew')).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0].details).toMatchObject({ reason: 'lock_lost' });
    expect(safety).toMatchObject([{ reason: 'lock_lost', scope: 'lock', key: 'k' }]);
    // Lost is final: renew never resurrects it and sends nothing more.
    await expect(lock.renew()).rejects.toBeInstanceOf(LockLostError);
    expect(sent('renew')).toHaveLength(1);
  });

  it.each([
    ['a connection never made', () => unreachable('connect')],
    ['NOT_LEADER', () => envelope('NOT_LEADER')],
  ])('renew is retried once after %s; the lease counts from the retry', async (_name, fail) => {
    const { clock, client, sent, overrides } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 2_000 }))!;
    let tries = 0;
    overrides.renew = (req) => {
      tries++;
      if (tries === 1) {
        clock.jump(100);
        return fail();
      }
      return ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: SID,
        fencingToken: req.headers['x-fencing-token'],
        acquiredAt: serverAt(0),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + 2_000),
      });
    };
    await lock.renew();
    expect(sent('renew').map((r) => r.sentAtMs)).toEqual([0, 100]);
    expect(sent('renew').map((r) => r.headers['x-fencing-token'])).toEqual(['42', '42']);
    expect(lock.deadline).toBeCloseTo(100 + 1_400, 9);
  });

  it('renew gives up after its one retry', async () => {
    const { client, sent, overrides } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    overrides.renew = () => unreachable('connect');
    await expect(lock.renew()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(sent('renew')).toHaveLength(2);
    expect(lock.state).toBe('held');
  });

  it('renew answering SESSION_EXPIRED loses the whole session', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    const a = (await session.tryAcquire('a'))!;
    const b = (await session.tryAcquire('b'))!;
    overrides.renew = () => envelope('SESSION_EXPIRED');
    await expect(a.renew()).rejects.toBeInstanceOf(SessionLostError);
    expect(session.state).toBe('lost');
    expect(() => b.checkStillHeld()).toThrow(LockLostError);
  });

  it('renew answering SESSION_UNKNOWN loses the whole session too', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    const a = (await session.tryAcquire('a'))!;
    overrides.renew = () => envelope('SESSION_UNKNOWN');
    await expect(a.renew()).rejects.toBeInstanceOf(SessionLostError);
    expect(session.state).toBe('lost');
  });

  it('a handle tells how long it has left, and nothing once released or lost', async () => {
    const { clock, client } = setup();
    const session = await client.openSession();
    const kept = (await session.tryAcquire('kept', { ttlMs: 2_000 }))!;
    const freed = (await session.tryAcquire('freed', { ttlMs: 2_000 }))!;
    await clock.advance(400);
    // 2 000 ms * (1 - 0.3) from the send at 0, read at 400.
    expect(kept.remainingMs()).toBeCloseTo(1_000, 9);
    await freed.release();
    expect(freed.state).toBe('released');
    expect(freed.remainingMs()).toBe(0);
    let caught: unknown;
    try {
      freed.checkStillHeld();
    } catch (err) {
      caught = err;
    }
    expect((caught as LockLostError).details).toMatchObject({ key: 'freed', reason: 'released' });
    await clock.advance(1_000);
    expect(kept.state).toBe('lost');
    expect(kept.remainingMs()).toBe(0);
    await kept.release();
    expect(kept.state).toBe('lost');
  });

  it('a renew failure that says nothing about the lock (timeout) leaves the deadline running', async () => {
    const { clock, client, overrides } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 1_000 }))!;
    overrides.renew = () => unreachable('response');
    await expect(lock.renew()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(lock.state).toBe('held');
    await clock.advance(700);
    expect(lock.state).toBe('lost');
  });

  it('release sends the token once; a released lock reads as not held without a loss event', async () => {
    const { clock, client, sent, safety } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('payout:9'))!;
    const lost: unknown[] = [];
    lock.onLockLost((e) => lost.push(e));
    await expect(lock.release()).resolves.toBe(true);
    const [release] = sent('release');
    expect(release.method).toBe('DELETE');
    expect(release.url.pathname).toBe('/v1/locks/payout%3A9');
    expect(release.headers['x-fencing-token']).toBe('42');
    expect(release.json).toEqual({ sessionId: SID });
    expect(() => lock.checkStillHeld()).toThrow(LockLostError);
    await expect(lock.release()).resolves.toBe(false);
    expect(sent('release')).toHaveLength(1);
    await clock.advance(5_000);
    expect(lost).toEqual([]);
    expect(safety).toEqual([]);
    expect(session.heldLockCount).toBe(0);
  });

  it('release swallows LOCK_LOST (benign) and failures, and never retries', async () => {
    const { client, sent, overrides } = setup();
    const session = await client.openSession();
    const a = (await session.tryAcquire('a'))!;
    const b = (await session.tryAcquire('b'))!;
    overrides.release = (req) =>
      req.url.pathname.endsWith('/a') ? envelope('LOCK_LOST') : unreachable('connect');
    await expect(a.release()).resolves.toBe(false);
    await expect(b.release()).resolves.toBe(false);
    expect(sent('release')).toHaveLength(2);
  });

  it('a locally lost lock is still released server-side (the server may hold it for the margin)', async () => {
    const { clock, client, sent } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 1_000 }))!;
    await clock.advance(700);
    expect(lock.state).toBe('lost');
    await expect(lock.release()).resolves.toBe(false);
    expect(sent('release')[0].headers['x-fencing-token']).toBe('42');
  });
});

describe('LockSession: tryAcquire and acquire', () => {
  it('tryAcquire returns null on 409 LOCK_CONTENDED', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    overrides.acquire = () => envelope('LOCK_CONTENDED', { retryAfterMillis: 100 });
    await expect(session.tryAcquire('k')).resolves.toBeNull();
    expect(session.heldLockCount).toBe(0);
  });

  it('tryAcquire sends sessionId, ttlMillis, waitMillis and the owner; read budget grows by the wait', async () => {
    const { client, sent } = setup();
    const session = await client.openSession();
    await session.tryAcquire('payout:acc-7', { ttlMs: 5_000, waitMs: 1_000 });
    const [req] = sent('acquire');
    expect(req.url.pathname).toBe('/v1/locks/payout%3Aacc-7/acquire');
    expect(req.json).toEqual({ sessionId: SID, ttlMillis: 5_000, waitMillis: 1_000 });
    expect(req.headers['x-owner-id']).toBe('worker-1');
    expect(req.headers['x-fencing-token']).toBeUndefined();
    expect([req.connectTimeoutMs, req.readTimeoutMs]).toEqual([500, 3_000]);
  });

  it.each([
    [
      '429 CONTENTION_EXCEEDED',
      envelope('CONTENTION_EXCEEDED', { retryAfterMillis: 500 }),
      ContentionError,
    ],
    ['409 FENCED_OUT', envelope('FENCED_OUT'), FencedOutError],
    ['410 SESSION_EXPIRED', envelope('SESSION_EXPIRED'), SessionLostError],
    ['a non-envelope 502', { status: 502, text: '<html>bad gateway</html>' }, ProtocolError],
  ])('tryAcquire throws the typed error of %s', async (_name, answer, type) => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    overrides.acquire = () => answer;
    await expect(session.tryAcquire('k')).rejects.toBeInstanceOf(type);
  });

  it('acquire retries contention 5 times at most (6 attempts), honouring retryAfterMillis, then throws ContentionError', async () => {
    const { clock, client, sent, overrides } = setup({ random: () => 0 });
    const session = await client.openSession();
    overrides.acquire = () =>
      envelope('LOCK_CONTENDED', { retryAfterMillis: 150, details: { holderOwnerId: 'w2' } });
    const failure = await clock.settle(session.acquire('k').catch((e: unknown) => e));
    expect(failure).toBeInstanceOf(ContentionError);
    expect(failure).toMatchObject({
      code: 'CONTENTION_EXCEEDED',
      details: { holderOwnerId: 'w2', attempts: 6 },
    });
    expect(sent('acquire').map((r) => r.sentAtMs)).toEqual([0, 150, 300, 450, 600, 750]);
  });

  it('acquire never retries FENCED_OUT', async () => {
    const { clock, client, sent, overrides } = setup();
    const session = await client.openSession();
    overrides.acquire = () => envelope('FENCED_OUT');
    await expect(clock.settle(session.acquire('k'))).rejects.toBeInstanceOf(FencedOutError);
    expect(sent('acquire')).toHaveLength(1);
  });

  it('acquire rides out NOT_LEADER and a connect failure; the deadline counts from the winning send', async () => {
    const { clock, client, sent, overrides } = setup({ random: () => 0.999 });
    const session = await client.openSession();
    const scripted: FakeReply[] = [
      envelope('NOT_LEADER', { retryAfterMillis: 10 }),
      unreachable('connect'),
    ];
    overrides.acquire = (req) => {
      const next = scripted.shift();
      if (next) return next;
      return ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: '9007199254740993',
        acquiredAt: serverAt(clock.nowMs()),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + 2_000),
      });
    };
    const lock = await clock.settle(session.acquire('k'));
    const times = sent('acquire').map((r) => r.sentAtMs);
    expect(times).toHaveLength(3);
    expect(lock.fencingToken).toBe(9007199254740993n);
    expect(lock.deadline).toBeCloseTo(Math.min(times[2] + 1_400, session.deadline), 9);
  });

  it('acquire stops when its AbortSignal fires during a backoff wait', async () => {
    const { clock, client, sent, overrides } = setup({ random: () => 0.999 });
    const session = await client.openSession();
    overrides.acquire = () => envelope('LOCK_CONTENDED', { retryAfterMillis: 400 });
    const controller = new AbortController();
    const pending = session.acquire('k', { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(100);
    controller.abort(new Error('shutdown'));
    await expect(pending).resolves.toMatchObject({ message: 'shutdown' });
    await clock.advance(5_000);
    expect(sent('acquire')).toHaveLength(1);
  });

  it('one live handle per key per session', async () => {
    const { client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    await expect(session.tryAcquire('k')).rejects.toThrow(/already holds/);
    await lock.release();
    await expect(session.tryAcquire('k')).resolves.not.toBeNull();
  });

  it('rejects a bad key locally with VALIDATION_FAILED', async () => {
    const { client, sent } = setup();
    const session = await client.openSession();
    await expect(session.tryAcquire('no spaces')).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    expect(sent('acquire')).toHaveLength(0);
  });
});

describe('int64 tokens on the wire', () => {
  it('keeps every digit of a token above 2^53', async () => {
    const { client, overrides, sent } = setup();
    const session = await client.openSession();
    overrides.acquire = (req) =>
      ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: '9223372036854775807',
        acquiredAt: serverAt(0),
        grantProof: 'proof',
        expiresAt: serverAt(2_000),
      });
    const lock = (await session.tryAcquire('k'))!;
    expect(lock.fencingToken).toBe(9223372036854775807n);
    await lock.renew();
    expect(sent('renew')[0].headers['x-fencing-token']).toBe('9223372036854775807');
  });

  it('refuses a token that arrives as an inexact JSON number instead of rounding it', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    overrides.acquire = (req) => ({
      status: 200,
      text: `{"key":"k","ownerId":"w","sessionId":"${req.json.sessionId}","fencingToken":9007199254740993,"grantProof":"proof","acquiredAt":"${serverAt(0)}","expiresAt":"${serverAt(2_000)}"}`,
    });
    await expect(session.tryAcquire('k')).rejects.toBeInstanceOf(ProtocolError);
  });
});

describe('LockSession.close', () => {
  it('sends L3 once, ends every held lock, emits session_lost only when locks were held, stops all timers', async () => {
    const { clock, client, sent, safety } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    const lost: LockLostError[] = [];
    lock.onLockLost((e) => lost.push(e));
    await Promise.all([session.close(), session.close()]);
    expect(sent('close')).toHaveLength(1);
    expect(sent('close')[0].headers['x-owner-id']).toBe('worker-1');
    expect(lost[0].details).toMatchObject({ reason: 'session_closed' });
    expect(session.state).toBe('closed');
    expect(session.signal.aborted).toBe(true);
    expect(safety).toMatchObject([
      { reason: 'session_closed', scope: 'session', lostLockCount: 1 },
    ]);
    expect(clock.pendingTimers()).toBe(0);
    // The server released it with the session: nothing to send.
    await expect(lock.release()).resolves.toBe(false);
    expect(sent('release')).toHaveLength(0);
    await expect(session.tryAcquire('k2')).rejects.toBeInstanceOf(SessionLostError);

    const quiet = setup();
    const idle = await quiet.client.openSession();
    await idle.close();
    expect(quiet.safety).toEqual([]);
  });

  it('never rejects when the server cannot be reached', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    overrides.close = () => unreachable('connect');
    await expect(session.close()).resolves.toBeUndefined();
  });
});

describe('LockClient options', () => {
  it.each([
    [{ baseUrl: 'not a url' }, /baseUrl/],
    [{ baseUrl: 'https://x' }, /http:/],
    [{ ownerId: '' }, /ownerId/],
    [{ ownerId: 'x'.repeat(65) }, /ownerId/],
    [{ safetyMargin: 0 }, /safetyMargin/],
    [{ safetyMargin: 0.7 }, /safetyMargin/],
    [{ sessionTtlMs: 999 }, /sessionTtlMs/],
    [{ lockTtlMs: 60_001 }, /lockTtlMs/],
  ])('rejects %p', (bad, message) => {
    expect(
      () =>
        new LockClient({
          baseUrl: 'http://127.0.0.1:8081',
          ownerId: 'w',
          ...bad,
        }),
    ).toThrow(message);
  });

  it('server errors keep their contract code and retrySafe', async () => {
    const { client, overrides } = setup();
    overrides.open = () => envelope('NOT_LEADER', { retryAfterMillis: 50 });
    const failure = await client.openSession().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DlockError);
    expect(failure).toMatchObject({
      code: 'NOT_LEADER',
      retrySafe: true,
      retryAfterMillis: 50,
      httpStatus: 503,
    });
  });
});

/**
 * The server may start a lease as soon as the request reaches it, so every
 * local deadline counts from when the request was sent; an answer that takes
 * a while must shorten what the client believes it holds, never lengthen it.
 */
describe('deadlines count from the send, never from the answer', () => {
  const ANSWER_MS = 400;

  /** Answers after ANSWER_MS on the fake clock, as a slow network would. */
  function late(clock: FakeClock, reply: (req: RecordedRequest) => FakeReply) {
    return (req: RecordedRequest): FakeReply =>
      new Promise((resolve, reject) =>
        clock.setTimer(() => {
          const answer = reply(req);
          if (answer instanceof Error) reject(answer);
          else void Promise.resolve(answer).then(resolve, reject);
        }, ANSWER_MS),
      );
  }

  it('a slow L1 answer: the session deadline is send time + ttl * (1 - margin)', async () => {
    const { clock, client, overrides } = setup();
    overrides.open = late(clock, (req) =>
      ok(201, {
        sessionId: SID,
        ownerId: 'worker-1',
        ttlMillis: req.json.ttlMillis,
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    );
    const session = await clock.settle(client.openSession(), 1);
    expect(clock.nowMs()).toBe(ANSWER_MS);
    expect(session.deadline).toBeCloseTo(0 + 2_100, 9);
  });

  it('a slow L4 answer: the lease deadline is the acquire send time + granted ttl * (1 - margin)', async () => {
    const { clock, client, overrides } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    clock.jump(1_000);
    overrides.acquire = late(clock, (req) =>
      ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: '42',
        acquiredAt: serverAt(clock.nowMs()),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    );
    const lock = (await clock.settle(session.tryAcquire('k', { ttlMs: 2_000 }), 1))!;
    expect(clock.nowMs()).toBe(1_000 + ANSWER_MS);
    expect(lock.deadline).toBeCloseTo(1_000 + 1_400, 9);
  });

  it('a slow L5 answer: the renewed deadline counts from the renew send time', async () => {
    const { clock, client, overrides } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 2_000 }))!;
    await clock.advance(500);
    overrides.renew = late(clock, (req) =>
      ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: req.headers['x-fencing-token'],
        acquiredAt: serverAt(0),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    );
    await clock.settle(lock.renew(), 1);
    expect(clock.nowMs()).toBe(500 + ANSWER_MS);
    expect(lock.deadline).toBeCloseTo(500 + 1_400, 9);
  });

  it('a renew asking for more than the first grant carried never assumes the longer lease', async () => {
    const { clock, client } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 2_000 }))!;
    await clock.advance(500);
    await lock.renew({ ttlMs: 10_000 });
    expect(lock.deadline).toBeCloseTo(500 + 1_400, 9);
    await clock.advance(1_400);
    expect(lock.state).toBe('lost');
  });

  it('a grant shorter than asked: the lease deadline follows what the server granted', async () => {
    const { clock, client, overrides } = setup({ sessionTtlMs: 60_000 });
    const session = await client.openSession();
    overrides.acquire = (req) =>
      ok(200, {
        key: 'k',
        ownerId: 'worker-1',
        sessionId: req.json.sessionId,
        fencingToken: '42',
        acquiredAt: serverAt(clock.nowMs()),
        grantProof: 'proof',
        expiresAt: serverAt(clock.nowMs() + 1_000),
      });
    const lock = (await session.tryAcquire('k', { ttlMs: 5_000 }))!;
    expect(lock.deadline).toBeCloseTo(700, 9);
  });
});
