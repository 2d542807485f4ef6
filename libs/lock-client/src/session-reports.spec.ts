import { AssertionError } from 'node:assert';
import { DlockError, LockLostError, SessionLostError } from '@dlock/lock-api';
import {
  FakeClock,
  envelope,
  fakeTransport,
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
import type { LockClientLogger, LockClientOptions, SessionLostFields } from './options';

/**
 * What the SDK tells the application and the operator beyond the happy path:
 * the error a loss carries, the log lines a failure leaves, a grant that
 * arrives too late, and answers that break the protocol. Fake clock, scripted
 * lock-server (see lock-session.spec.ts for the protocol itself).
 */

interface LogLine {
  level: keyof LockClientLogger;
  fields: Record<string, unknown>;
  message: string;
}

function setup(options: Partial<LockClientOptions> = {}) {
  const clock = new FakeClock();
  const logs: LogLine[] = [];
  const safety: SessionLostFields[] = [];
  const record = (level: LogLine['level']) => (fields: Record<string, unknown>, message: string) =>
    void logs.push({ level, fields, message });
  const logger: LockClientLogger = {
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
  };
  let nextToken = 41n;
  const grant = (req: RecordedRequest, token: string, key?: string) =>
    ok(200, {
      key: key ?? decodeURIComponent(req.url.pathname.split('/')[3]),
      ownerId: 'worker-1',
      sessionId: req.json.sessionId,
      fencingToken: token,
      acquiredAt: serverAt(clock.nowMs()),
      grantProof: 'proof',
      expiresAt: serverAt(clock.nowMs() + (req.json.ttlMillis ?? 2_000)),
    });
  const overrides: Partial<Record<Route, (req: RecordedRequest) => FakeReply>> = {};
  const defaults: Record<Route, (req: RecordedRequest) => FakeReply> = {
    open: (req) =>
      ok(201, {
        sessionId: SID,
        ownerId: 'worker-1',
        ttlMillis: req.json.ttlMillis,
        expiresAt: serverAt(clock.nowMs() + req.json.ttlMillis),
      }),
    heartbeat: () =>
      ok(200, {
        sessionId: SID,
        expiresAt: serverAt(clock.nowMs() + 60_000),
        serverTime: serverAt(clock.nowMs()),
        heldLockCount: 0,
      }),
    close: () => ok(204),
    acquire: (req) => grant(req, String(++nextToken)),
    renew: (req) => grant(req, req.headers['x-fencing-token']),
    release: () => ok(204),
  };
  const transport = fakeTransport(clock, (req) =>
    (overrides[route(req)] ?? defaults[route(req)])(req),
  );
  const client = new LockClient({
    baseUrl: 'http://lock-server.test:8081',
    ownerId: 'worker-1',
    sessionTtlMs: 60_000,
    lockTtlMs: 2_000,
    clock,
    transport,
    logger,
    random: () => 0.5,
    events: {
      onSafetyEvent: (event, fields) => {
        expect(event).toBe('session_lost');
        safety.push(fields);
      },
    },
    ...options,
  });
  const sent = (r: Route) => transport.requests.filter((req) => route(req) === r);
  return { clock, client, overrides, logs, safety, sent, grant };
}

describe('what a handle reports', () => {
  it("expiresAt is the server's expiry as last granted, moved by each renew", async () => {
    const { clock, client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    expect(lock.expiresAt).toEqual(new Date(serverAt(2_000)));
    await clock.advance(500);
    await lock.renew();
    expect(lock.expiresAt).toEqual(new Date(serverAt(2_500)));
  });

  it('a lost lock throws an error naming the key and why, with its token', async () => {
    const { clock, client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    await clock.advance(2_000);
    expect(() => lock.checkStillHeld()).toThrow(LockLostError);
    let caught: unknown;
    try {
      lock.checkStillHeld();
    } catch (err) {
      caught = err;
    }
    expect((caught as LockLostError).message).toBe('lock k lost (lock_deadline)');
    expect((caught as LockLostError).details).toEqual({
      key: 'k',
      reason: 'lock_deadline',
      fencingToken: '42',
    });
  });

  it('a released lock throws "lock released" when checked', async () => {
    const { client } = setup();
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    await lock.release();
    expect(() => lock.checkStillHeld()).toThrow(
      expect.objectContaining({
        message: 'lock released',
        details: { key: 'k', reason: 'released', fencingToken: '42' },
      }),
    );
  });

  it.each([
    ['another token', { token: '99' }, 'renew must never re-issue a token'],
    ['another key', { key: 'other' }, 'renew answered for another key'],
  ])(
    'a renew answered with %s is refused, not adopted',
    async (_what, change: { token?: string; key?: string }, message) => {
      const { client, overrides, grant } = setup();
      const session = await client.openSession();
      const lock = (await session.tryAcquire('k'))!;
      const deadline = lock.deadline;
      overrides.renew = (req) =>
        grant(req, change.token ?? req.headers['x-fencing-token'], change.key);
      const err: unknown = await lock.renew().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AssertionError);
      expect((err as AssertionError).message.split('\n')[0]).toBe(message);
      expect(lock.fencingToken).toBe(42n);
      expect(lock.deadline).toBe(deadline);
    },
  );

  it('release logs a lock already gone as benign (info) and any other failure as a warning', async () => {
    const { client, overrides, logs } = setup();
    const session = await client.openSession();
    const gone = (await session.tryAcquire('gone'))!;
    const cut = (await session.tryAcquire('cut'))!;
    overrides.release = (req) =>
      req.url.pathname.includes('gone') ? envelope('LOCK_LOST') : unreachable('response');
    expect(await gone.release()).toBe(false);
    expect(await cut.release()).toBe(false);
    expect(
      logs.map(({ level, fields, message }) => [level, fields.key, fields.code, message]),
    ).toEqual([
      ['info', 'gone', 'LOCK_LOST', 'release: lock already gone (benign)'],
      ['warn', 'cut', 'UNAVAILABLE', 'release failed; the lease will expire on its own'],
    ]);
    expect(logs.map((l) => l.fields.sessionId)).toEqual([SID, SID]);
    expect(logs[0].fields.err).toBeInstanceOf(DlockError);
  });

  it('a throwing loss listener is logged with which listener it was; the others still run', async () => {
    const { clock, client, logs } = setup({ sessionTtlMs: 3_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    const heard: string[] = [];
    lock.onLockLost(() => {
      throw new Error('listener bug');
    });
    session.onLost(() => {
      throw new Error('listener bug');
    });
    session.onLost(() => void heard.push('session'));
    await clock.advance(2_000);
    await session.close();
    const thrown = logs.filter((l) => l.message === 'lock-client listener threw');
    expect(thrown.map((l) => [l.level, l.fields.listener])).toEqual([
      ['error', 'onLockLost(k)'],
      ['error', 'session.onLost'],
    ]);
    expect(heard).toEqual(['session']);
  });
});

describe('what a session reports', () => {
  it('a released old handle leaves the handle that re-acquired its key in place', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    const old = (await session.tryAcquire('k'))!;
    overrides.renew = () => envelope('LOCK_LOST');
    await expect(old.renew()).rejects.toBeInstanceOf(LockLostError);
    const again = (await session.tryAcquire('k'))!;
    expect(session.heldLockCount).toBe(1);
    await old.release();
    expect(session.heldLockCount).toBe(1);
    expect(again.state).toBe('held');
    await again.release();
    expect(session.heldLockCount).toBe(0);
  });

  it.each([
    [
      'another key',
      (body: Record<string, unknown>) => ({ ...body, key: 'other' }),
      'acquire answered for another key',
    ],
    [
      'another session',
      (body: Record<string, unknown>) => ({
        ...body,
        sessionId: '00000000-0000-4000-8000-000000000000',
      }),
      'acquire answered for another session',
    ],
  ])('an acquire answered for %s is refused, not adopted', async (_what, change, message) => {
    const { client, overrides, grant } = setup();
    const session = await client.openSession();
    overrides.acquire = (req) => {
      const answer = grant(req, '50');
      return ok(answer.status, change(JSON.parse(answer.text)));
    };
    const err: unknown = await session.tryAcquire('k').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssertionError);
    expect((err as AssertionError).message.split('\n')[0]).toBe(message);
    expect(session.heldLockCount).toBe(0);
  });

  it('a bad key is refused naming the field and the pattern', async () => {
    const { client } = setup();
    const session = await client.openSession();
    const err: unknown = await session.tryAcquire('no spaces').catch((e: unknown) => e);
    expect((err as DlockError).details).toEqual({
      fields: [{ field: 'key', message: 'must match [a-zA-Z0-9:._-]{1,128}' }],
    });
  });

  it('a deadline noticed by the clock, not the timer, loses the session as session_deadline', async () => {
    const { clock, client, safety } = setup({ sessionTtlMs: 3_000 });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k', { ttlMs: 30_000 }))!;
    clock.jump(2_100); // the event loop was blocked: no timer ran
    expect(() => lock.checkStillHeld()).toThrow(LockLostError);
    expect(safety).toEqual([
      {
        reason: 'session_deadline',
        scope: 'session',
        ownerId: 'worker-1',
        sessionId: SID,
        lostLockCount: 1,
      },
    ]);
    expect(session.remainingMs()).toBe(0);
  });

  it('a closed session has no time left, whatever its deadline said', async () => {
    const { client } = setup();
    const session = await client.openSession();
    expect(session.remainingMs()).toBeGreaterThan(0);
    await session.close();
    expect(session.remainingMs()).toBe(0);
  });

  it('the deadline after the last heartbeat that got through is kept to the millisecond', async () => {
    const { clock, client, overrides } = setup({ sessionTtlMs: 3_000 });
    overrides.heartbeat = () =>
      ok(200, {
        sessionId: SID,
        expiresAt: serverAt(clock.nowMs() + 3_000),
        serverTime: serverAt(clock.nowMs()),
        heldLockCount: 0,
      });
    const session = await client.openSession();
    await clock.advance(1_000); // one heartbeat through: deadline 1 000 + 2 100
    overrides.heartbeat = () => unreachable('connect');
    await clock.advance(2_099);
    expect(session.state).toBe('open');
    await clock.advance(1);
    expect(session.state).toBe('lost');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a slow L2 answer: the extended deadline counts from the heartbeat send time', async () => {
    const { clock, client, overrides } = setup({ sessionTtlMs: 3_000 });
    const session = await client.openSession();
    overrides.heartbeat = () =>
      new Promise((resolve) =>
        clock.setTimer(
          () =>
            resolve(
              ok(200, {
                sessionId: SID,
                expiresAt: serverAt(clock.nowMs() + 3_000),
                serverTime: serverAt(clock.nowMs()),
                heldLockCount: 0,
              }),
            ),
          400,
        ),
      );
    await clock.advance(1_400); // sent at 1 000, answered at 1 400
    expect(session.deadline).toBeCloseTo(1_000 + 2_100, 9);
  });

  it('a heartbeat timer that fires late still gets a full round of budget', async () => {
    const { clock, client, sent } = setup({ sessionTtlMs: 3_000 });
    await client.openSession();
    clock.jump(1_500); // the round was due at 1 000; the event loop was busy
    await clock.advance(0);
    const [beat] = sent('heartbeat');
    expect([beat.sentAtMs, beat.connectTimeoutMs, beat.readTimeoutMs]).toEqual([1_500, 300, 1_000]);
  });

  it('a round whose first try used up the interval sends no second try with no time left', async () => {
    const { clock, client, sent, overrides } = setup({ sessionTtlMs: 3_000 });
    await client.openSession();
    // The first try hangs for its whole read budget, which ends exactly at the round's end.
    overrides.heartbeat = (req) =>
      new Promise<never>((_resolve, reject) =>
        clock.setTimer(() => reject(unreachable('response')), req.readTimeoutMs),
      );
    await clock.advance(2_000);
    // At 2 000 the next round starts with a full budget; nothing is sent with none.
    expect(sent('heartbeat').map((r) => [r.sentAtMs, r.readTimeoutMs])).toEqual([
      [1_000, 1_000],
      [2_000, 1_000],
    ]);
  });

  it('an acquire answered SESSION_EXPIRED after the session closed leaves it closed, with no loss reported', async () => {
    const { clock, client, overrides, safety } = setup();
    const session = await client.openSession();
    overrides.acquire = () =>
      new Promise((resolve) => clock.setTimer(() => resolve(envelope('SESSION_EXPIRED')), 100));
    const pending = session.tryAcquire('k').catch((e: unknown) => e);
    await session.close();
    await clock.advance(100);
    expect(await pending).toBeInstanceOf(SessionLostError);
    expect(session.state).toBe('closed');
    expect(safety).toEqual([]);
  });

  it('a failed acquire frees its key for the next try', async () => {
    const { client, overrides } = setup();
    const session = await client.openSession();
    overrides.acquire = () => unreachable('response');
    await expect(session.tryAcquire('k')).rejects.toThrow();
    delete overrides.acquire;
    expect(await session.tryAcquire('k')).not.toBeNull();
  });

  it('refuses a lease or wait outside its range before sending, naming the option', async () => {
    const { client, sent } = setup();
    const session = await client.openSession();
    await expect(session.tryAcquire('k', { ttlMs: 999 })).rejects.toThrow(
      'lock-client ttlMs must be an integer in 1000..',
    );
    await expect(session.tryAcquire('k', { waitMs: -1 })).rejects.toThrow(
      'lock-client waitMs must be an integer in 0..',
    );
    expect(sent('acquire')).toHaveLength(0);
  });

  it.each([
    ['SESSION_EXPIRED', 'session_expired'],
    ['SESSION_UNKNOWN', 'session_unknown'],
  ] as const)(
    'an acquire answered %s loses the session with that reason, and sends no L3',
    async (code, reason) => {
      const { client, overrides, safety, sent, logs } = setup();
      const session = await client.openSession();
      const held = (await session.tryAcquire('held'))!;
      overrides.acquire = () => envelope(code);
      await expect(session.tryAcquire('k')).rejects.toBeInstanceOf(SessionLostError);
      expect(session.state).toBe('lost');
      expect(held.state).toBe('lost');
      expect(safety).toEqual([
        { reason, scope: 'session', ownerId: 'worker-1', sessionId: SID, lostLockCount: 1 },
      ]);
      expect(logs.filter((l) => l.fields.event === 'session_lost')).toEqual([
        {
          level: 'warn',
          fields: { event: 'session_lost', ...safety[0] },
          message: 'lock-client: lost',
        },
      ]);
      expect(sent('close')).toHaveLength(0);
      await session.close();
      expect(sent('close')).toHaveLength(0);
    },
  );

  it('a grant that arrives after the session closed is not handed out', async () => {
    const { clock, client, overrides, grant } = setup();
    const session = await client.openSession();
    overrides.acquire = (req) =>
      new Promise((resolve) => clock.setTimer(() => resolve(grant(req, '50')), 100));
    const pending = session.tryAcquire('k').catch((e: unknown) => e);
    await session.close();
    await clock.advance(100);
    const err = await pending;
    expect(err).toBeInstanceOf(SessionLostError);
    expect((err as SessionLostError).code).toBe('SESSION_EXPIRED');
    expect((err as SessionLostError).message).toBe(`session ${SID} is closed`);
    expect((err as SessionLostError).details).toEqual({ sessionId: SID, state: 'closed' });
    expect(session.heldLockCount).toBe(0);
  });

  it('a session lost at its local deadline says so and still tells the server (L3)', async () => {
    const { clock, client, overrides, sent } = setup({ sessionTtlMs: 3_000 });
    const session = await client.openSession();
    const errors: SessionLostError[] = [];
    session.onLost((e) => errors.push(e));
    overrides.heartbeat = () => unreachable('connect');
    await clock.advance(2_100);
    expect(session.state).toBe('lost');
    expect(errors.map((e) => [e.code, e.message, e.details])).toEqual([
      [
        'SESSION_EXPIRED',
        `session ${SID} lost (session_deadline)`,
        { sessionId: SID, reason: 'session_deadline' },
      ],
    ]);
    expect(sent('close')).toHaveLength(1);
  });

  it('logs a failed heartbeat with its try and code', async () => {
    const { clock, client, overrides, logs } = setup({ sessionTtlMs: 3_000 });
    const session = await client.openSession();
    overrides.heartbeat = () => envelope('NOT_LEADER', { retryAfterMillis: 10 });
    await clock.advance(1_000);
    const failed = logs.filter((l) => l.message === 'heartbeat failed');
    expect(
      failed.map((l) => [l.level, l.fields.sessionId, l.fields.tryIndex, l.fields.code]),
    ).toEqual([
      ['warn', SID, 0, 'NOT_LEADER'],
      ['warn', SID, 1, 'NOT_LEADER'],
      ['warn', SID, 2, 'NOT_LEADER'],
    ]);
    expect(session.state).toBe('open');
  });

  it('a close the server cannot confirm is a warning; one for a session it already dropped is debug', async () => {
    for (const [answer, level, code] of [
      [unreachable('connect'), 'warn', 'UNAVAILABLE'],
      [envelope('SESSION_UNKNOWN'), 'debug', 'SESSION_UNKNOWN'],
      [envelope('SESSION_EXPIRED'), 'debug', 'SESSION_EXPIRED'],
    ] as const) {
      const { client, overrides, logs } = setup();
      const session = await client.openSession();
      overrides.close = () => answer;
      await session.close();
      expect(logs.map((l) => [l.level, l.fields.sessionId, l.fields.code, l.message])).toEqual([
        [level, SID, code, 'session close not confirmed; the server expires it on its own'],
      ]);
    }
  });

  it('a client without an event hook loses its session without logging an error', async () => {
    const { client, logs } = setup({ events: undefined });
    const session = await client.openSession();
    await session.tryAcquire('k');
    await session.close();
    expect(logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(logs.filter((l) => l.fields.event === 'session_lost')).toHaveLength(1);
  });

  it('a throwing safety-event hook is logged and the loss still reaches the application', async () => {
    const { client, logs } = setup({
      events: {
        onSafetyEvent: () => {
          throw new Error('hook bug');
        },
      },
    });
    const session = await client.openSession();
    const lock = (await session.tryAcquire('k'))!;
    await session.close();
    expect(lock.state).toBe('lost');
    const hook = logs.filter((l) => l.level === 'error');
    expect(hook.map((l) => l.message)).toEqual(['lock-client onSafetyEvent hook threw']);
    expect((hook[0].fields.err as Error).message).toBe('hook bug');
  });
});
