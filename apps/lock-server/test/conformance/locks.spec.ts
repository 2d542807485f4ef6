import { http, sleep, waitFor } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { INSTANT, LockApi, PROOF, TOKEN, TRACE_ID, UUID } from '../support/lock-client';

describe.each(BACKENDS)('locks L4-L8 [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    server = await backend.start({ LOCK_WAITERS_MAX: '1' });
    api = new LockApi(server.url);
    alice = await api.session('alice', 30_000);
    bob = await api.session('bob', 30_000);
  });
  // The fixture sessions outlive a slow run only if someone heartbeats them.
  beforeEach(async () => {
    expect((await api.heartbeat(alice, 'alice')).status).toBe(200);
    expect((await api.heartbeat(bob, 'bob')).status).toBe(200);
  });
  afterAll(() => server.stop());

  it('L4 grants a free key with a fresh token, and L7 shows the holder', async () => {
    const res = await api.acquire('payout:acc-1', alice, 'alice', { ttlMillis: 5000 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      key: 'payout:acc-1',
      ownerId: 'alice',
      sessionId: alice,
      fencingToken: TOKEN,
      acquiredAt: INSTANT,
      expiresAt: INSTANT,
      grantProof: PROOF,
    });
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.acquiredAt)).toBe(5000);
    const info = await api.inspect('payout:acc-1');
    expect(info.status).toBe(200);
    expect(info.body).toEqual({
      key: 'payout:acc-1',
      held: true,
      ownerId: 'alice',
      fencingToken: res.body.fencingToken,
      acquiredAt: res.body.acquiredAt,
      expiresAt: res.body.expiresAt,
      waiterCount: 0,
    });
  });

  it('L4 uses the default lease TTL when none is asked for', async () => {
    const res = await api.acquire('default-ttl', alice, 'alice');
    expect(res.status).toBe(200);
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.acquiredAt)).toBe(15000);
  });

  it('L4 by the same owner and session returns the same grant, no new token', async () => {
    const first = await api.acquire('idem', alice, 'alice', { ttlMillis: 5000 });
    const again = await api.acquire('idem', alice, 'alice', { ttlMillis: 9000 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('L4 on a held key answers 409 LOCK_CONTENDED with the holder and a retry hint', async () => {
    const held = await api.acquire('contended', alice, 'alice', { ttlMillis: 5000 });
    const res = await api.acquire('contended', bob, 'bob');
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'LOCK_CONTENDED',
      message: expect.any(String),
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details: { holderOwnerId: 'alice', expiresAt: held.body.expiresAt },
      traceId: TRACE_ID,
    });
    expect(res.body.retryAfterMillis).toBeGreaterThan(0);
    expect(res.body.retryAfterMillis).toBeLessThanOrEqual(1000);
    // Another identity may not acquire on the holder's own session (docs/security.md).
    const foreign = await api.acquire('contended', alice, 'mallory');
    expect([foreign.status, foreign.body.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('L4 answers 404 SESSION_UNKNOWN and 410 SESSION_EXPIRED for dead sessions', async () => {
    const unknown = await api.acquire('k', '0b7c1e5a-1111-4222-8333-944455556666', 'x');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      code: 'SESSION_UNKNOWN',
      message: 'no such session',
      retrySafe: false,
      traceId: TRACE_ID,
    });
    const short = await api.session('short', 1000);
    await sleep(1_000);
    // etcd checks lease expiry on its own tick (~500 ms): poll, bounded.
    const expired = await waitFor(
      async () => {
        const r = await api.acquire('k', short, 'short');
        return r.status === 410 ? r : undefined;
      },
      3_000,
      'session expiry',
    );
    expect(expired.status).toBe(410);
    expect(expired.body).toEqual({
      code: 'SESSION_EXPIRED',
      message: 'session expired; its locks were released',
      retrySafe: false,
      details: { state: 'EXPIRED' },
      traceId: TRACE_ID,
    });
  });

  it('L4 waitMillis waits server-side and is granted when the holder releases', async () => {
    const held = await api.acquire('wait:release', alice, 'alice');
    const started = Date.now();
    const waiting = api.acquire('wait:release', bob, 'bob', { waitMillis: 5000 });
    await sleep(200);
    expect((await api.inspect('wait:release')).body.waiterCount).toBe(1);
    expect((await api.release('wait:release', alice, held.body.fencingToken)).status).toBe(204);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.ownerId).toBe('bob');
    expect(BigInt(res.body.fencingToken)).toBeGreaterThan(BigInt(held.body.fencingToken));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await api.inspect('wait:release')).body.waiterCount).toBe(0);
  });

  it('L4 waitMillis gives up with 409 LOCK_CONTENDED at the deadline', async () => {
    expect((await api.acquire('wait:timeout', alice, 'alice')).status).toBe(200);
    const started = Date.now();
    const res = await api.acquire('wait:timeout', bob, 'bob', { waitMillis: 400 });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('LOCK_CONTENDED');
    expect(elapsed).toBeGreaterThanOrEqual(380);
    expect(elapsed).toBeLessThan(1_500);
  });

  it('L4 beyond the per-key waiter cap answers 429 CONTENTION_EXCEEDED', async () => {
    expect((await api.acquire('wait:cap', alice, 'alice')).status).toBe(200);
    const carol = await api.session('carol');
    const first = api.acquire('wait:cap', bob, 'bob', { waitMillis: 1000 });
    await sleep(150);
    const res = await api.acquire('wait:cap', carol, 'carol', { waitMillis: 1000 });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({
      code: 'CONTENTION_EXCEEDED',
      message: 'too many acquires already waiting for this key (max 1)',
      retrySafe: true,
      retryAfterMillis: expect.any(Number),
      details: { reason: 'waiters-per-key', waitersMax: 1 },
      traceId: TRACE_ID,
    });
    expect((await first).status).toBe(409);
  });

  it('L5 restarts the lease with its granted TTL and never changes the token', async () => {
    const grant = await api.acquire('renew:ok', alice, 'alice', { ttlMillis: 2000 });
    await sleep(300);
    const res = await api.renew('renew:ok', alice, grant.body.fencingToken, { ttlMillis: 8000 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...grant.body,
      expiresAt: INSTANT,
    });
    // Extended, but by the grant's own TTL on both backends (an etcd lease's TTL is fixed).
    const extendedMs = Date.parse(res.body.expiresAt) - Date.parse(grant.body.expiresAt);
    expect(extendedMs).toBeGreaterThan(0);
    expect(extendedMs).toBeLessThan(2000);
    const plain = await api.renew('renew:ok', alice, grant.body.fencingToken);
    expect(plain.status).toBe(200);
    expect(plain.body.fencingToken).toBe(grant.body.fencingToken);
  });

  it('L5 with a token that is not the live grant answers 409 LOCK_LOST with storedToken', async () => {
    const grant = await api.acquire('renew:lost', alice, 'alice');
    const stale = (BigInt(grant.body.fencingToken) - 1n).toString();
    const res = await api.renew('renew:lost', alice, stale);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'LOCK_LOST',
      message: 'the grant has expired, was released, revoked or taken over',
      retrySafe: false,
      details: { storedToken: grant.body.fencingToken },
      traceId: TRACE_ID,
    });
    // Bob's session does not hold it either.
    expect((await api.renew('renew:lost', bob, grant.body.fencingToken)).body.code).toBe(
      'LOCK_LOST',
    );
  });

  it("L5 names the key's latest token once released, and null for a key never acquired", async () => {
    const grant = await api.acquire('renew:released', alice, 'alice');
    expect((await api.release('renew:released', alice, grant.body.fencingToken)).status).toBe(204);
    const lockLost = (storedToken: string | null) => ({
      status: 409,
      body: {
        code: 'LOCK_LOST',
        message: 'the grant has expired, was released, revoked or taken over',
        retrySafe: false,
        details: { storedToken },
        traceId: TRACE_ID,
      },
    });
    const released = await api.renew('renew:released', alice, grant.body.fencingToken);
    expect({ status: released.status, body: released.body }).toEqual(
      lockLost(grant.body.fencingToken),
    );
    const never = await api.renew('renew:never', alice, grant.body.fencingToken);
    expect({ status: never.status, body: never.body }).toEqual(lockLost(null));
  });

  it('L5 on a session never issued answers 404 SESSION_UNKNOWN', async () => {
    const grant = await api.acquire('renew:unknown', alice, 'alice');
    const res = await api.renew(
      'renew:unknown',
      '0b7c1e5a-1111-4222-8333-944455556666',
      grant.body.fencingToken,
    );
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: {
        code: 'SESSION_UNKNOWN',
        message: 'no such session',
        retrySafe: false,
        traceId: TRACE_ID,
      },
    });
  });

  it('L5 on an expired session answers 410 SESSION_EXPIRED', async () => {
    const short = await api.session('short-renew', 1000);
    const grant = await api.acquire('renew:expired', short, 'short-renew');
    await sleep(1_000);
    const res = await waitFor(
      async () => {
        const r = await api.renew('renew:expired', short, grant.body.fencingToken);
        return r.status === 410 ? r : undefined;
      },
      3_000,
      'session expiry',
    );
    expect(res.status).toBe(410);
    expect(res.body.code).toBe('SESSION_EXPIRED');
    expect(res.body.details).toEqual({ state: 'EXPIRED' });
  });

  it('L5 on a closed session answers 410 SESSION_EXPIRED with details.state CLOSED', async () => {
    const closing = await api.session('closed-renew');
    const grant = await api.acquire('renew:closed', closing, 'closed-renew');
    expect((await api.closeSession(closing, 'closed-renew')).status).toBe(204);
    const res = await api.renew('renew:closed', closing, grant.body.fencingToken);
    expect([res.status, res.body.code, res.body.details]).toEqual([
      410,
      'SESSION_EXPIRED',
      { state: 'CLOSED' },
    ]);
  });

  it('L6 releases with 204 and no body; a second release is 409 LOCK_LOST', async () => {
    const grant = await api.acquire('release:ok', alice, 'alice');
    const res = await api.release('release:ok', alice, grant.body.fencingToken);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await api.inspect('release:ok')).body).toEqual({
      key: 'release:ok',
      held: false,
      waiterCount: 0,
    });
    const again = await api.release('release:ok', alice, grant.body.fencingToken);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      code: 'LOCK_LOST',
      message: 'the grant had already expired or was taken over',
      retrySafe: false,
      traceId: TRACE_ID,
    });
  });

  it('L6 with a stale token cannot release the newer grant', async () => {
    const old = await api.acquire('release:stale', alice, 'alice');
    await api.release('release:stale', alice, old.body.fencingToken);
    const fresh = await api.acquire('release:stale', bob, 'bob');
    const res = await api.release('release:stale', alice, old.body.fencingToken);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('LOCK_LOST');
    expect((await api.inspect('release:stale')).body.fencingToken).toBe(fresh.body.fencingToken);
  });

  it('L6 also accepts sessionId in a JSON body', async () => {
    const grant = await api.acquire('release:body', alice, 'alice');
    const res = await http('DELETE', `${server.url}/v1/locks/release:body`, {
      headers: { 'x-owner-id': 'alice', 'x-fencing-token': grant.body.fencingToken },
      body: { sessionId: alice },
    });
    expect(res.status).toBe(204);
  });

  it('L7 answers 404 NOT_FOUND for a key never seen', async () => {
    const res = await api.inspect('never:seen');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      code: 'NOT_FOUND',
      message: 'this key has never been acquired',
      retrySafe: false,
      traceId: TRACE_ID,
    });
  });

  it('L8 revokes, audits, advances the floor, and fences the deposed holder', async () => {
    const grant = await api.acquire('revoke:ok', alice, 'alice');
    const res = await api.revoke('revoke:ok', {
      operator: 'ops-jane',
      reason: 'stuck worker, ticket OPS-42',
      expectedToken: grant.body.fencingToken,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      revokedToken: grant.body.fencingToken,
      newTokenFloor: TOKEN,
      revocationId: UUID,
    });
    const floor = BigInt(res.body.newTokenFloor);
    expect(floor).toBeGreaterThan(BigInt(grant.body.fencingToken));
    expect((await api.inspect('revoke:ok')).body.held).toBe(false);
    const renew = await api.renew('revoke:ok', alice, grant.body.fencingToken);
    expect(renew.status).toBe(409);
    expect(renew.body.code).toBe('LOCK_LOST');
    const next = await api.acquire('revoke:ok', bob, 'bob');
    expect(next.status).toBe(200);
    expect(BigInt(next.body.fencingToken)).toBeGreaterThan(floor);
  });

  it('L8 with a stale expectedToken answers 409 FENCED_OUT and changes nothing', async () => {
    const grant = await api.acquire('revoke:cas', alice, 'alice');
    const stale = (BigInt(grant.body.fencingToken) - 1n).toString();
    const res = await api.revoke('revoke:cas', {
      operator: 'ops',
      reason: 'testing the CAS guard',
      expectedToken: stale,
    });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'FENCED_OUT',
      message: 'expectedToken is not the live grant of this key',
      retrySafe: false,
      details: { presentedToken: stale, highestToken: grant.body.fencingToken },
      traceId: TRACE_ID,
    });
    expect((await api.inspect('revoke:cas')).body.fencingToken).toBe(grant.body.fencingToken);
  });

  it('L8 on a released key with its last token expected answers 404 NOT_FOUND, not FENCED_OUT', async () => {
    const grant = await api.acquire('revoke:released', alice, 'alice');
    expect((await api.release('revoke:released', alice, grant.body.fencingToken)).status).toBe(204);
    const res = await api.revoke('revoke:released', {
      operator: 'ops',
      reason: 'nothing to revoke any more',
      expectedToken: grant.body.fencingToken,
    });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: {
        code: 'NOT_FOUND',
        message: 'the key is not held',
        retrySafe: false,
        traceId: TRACE_ID,
      },
    });
  });

  it("L4 by the holder's owner from another session is contended: a grant belongs to its session", async () => {
    const held = await api.acquire('contended:owner', alice, 'alice', { ttlMillis: 5000 });
    expect(held.status).toBe(200);
    const aliceAgain = await api.session('alice', 30_000);
    const res = await api.acquire('contended:owner', aliceAgain, 'alice');
    expect({ status: res.status, code: res.body.code, holder: res.body.details }).toEqual({
      status: 409,
      code: 'LOCK_CONTENDED',
      holder: { holderOwnerId: 'alice', expiresAt: held.body.expiresAt },
    });
  });

  it('L8 on a key that is not held answers 404 NOT_FOUND', async () => {
    const res = await api.revoke('revoke:free', { operator: 'ops', reason: 'nothing to revoke' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      code: 'NOT_FOUND',
      message: 'the key is not held',
      retrySafe: false,
      traceId: TRACE_ID,
    });
  });

  it.each([
    ['no operator', { reason: 'long enough reason' }],
    ['empty operator', { operator: '', reason: 'long enough reason' }],
    ['a reason under 8 chars', { operator: 'ops', reason: 'short' }],
    ['no reason', { operator: 'ops' }],
    ['a malformed expectedToken', { operator: 'ops', reason: 'long enough', expectedToken: '01' }],
  ])('L8 with %s answers 400 VALIDATION_FAILED and revokes nothing', async (_n, body) => {
    const grant = await api.acquire('revoke:bad', alice, 'alice');
    const res = await api.revoke('revoke:bad', body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: { fields: expect.any(Array) },
      traceId: TRACE_ID,
    });
    expect((await api.inspect('revoke:bad')).body.fencingToken).toBe(grant.body.fencingToken);
  });
});
