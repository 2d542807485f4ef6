import { sleep, waitFor } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/** L6's answer for a grant that is no longer live: never a success (issue 20). */
const LOCK_LOST = {
  code: 'LOCK_LOST',
  message: 'the grant had already expired or was taken over',
  retrySafe: false,
  traceId: TRACE_ID,
};

describe.each(BACKENDS)('expiry hands the key on with a larger token [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start();
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('lease expiry: the waiter gets the key, the old holder is LOCK_LOST', async () => {
    const a = await api.session('a', 20_000);
    const b = await api.session('b', 20_000);
    const old = await api.acquire('expire:lease', a, 'a', { ttlMillis: 1000 });
    expect(old.status).toBe(200);
    const started = Date.now();
    const next = await api.acquire('expire:lease', b, 'b', { waitMillis: 4_000 });
    expect(next.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(BigInt(next.body.fencingToken)).toBeGreaterThan(BigInt(old.body.fencingToken));
    const renew = await api.renew('expire:lease', a, old.body.fencingToken);
    expect(renew.status).toBe(409);
    expect(renew.body.code).toBe('LOCK_LOST');
    expect((await api.release('expire:lease', a, old.body.fencingToken)).status).toBe(409);
    // The session itself is still alive; only the lease lapsed.
    expect((await api.heartbeat(a, 'a')).body.heldLockCount).toBe(0);
  });

  it('session expiry: every lock of the dead session goes to the next holder', async () => {
    const a = await api.session('a', 1000);
    const b = await api.session('b', 20_000);
    const old = await api.acquire('expire:session', a, 'a', { ttlMillis: 30_000 });
    expect(old.status).toBe(200);
    const next = await api.acquire('expire:session', b, 'b', { waitMillis: 4_000 });
    expect(next.status).toBe(200);
    expect(BigInt(next.body.fencingToken)).toBeGreaterThan(BigInt(old.body.fencingToken));
    expect((await api.heartbeat(a, 'a')).status).toBe(410);
    const renewed = await api.renew('expire:session', a, old.body.fencingToken);
    expect({ status: renewed.status, body: renewed.body }).toEqual({
      status: 410,
      body: {
        code: 'SESSION_EXPIRED',
        message: 'session expired; its locks were released',
        retrySafe: false,
        traceId: TRACE_ID,
        details: { state: 'EXPIRED' },
      },
    });
  });

  it('release after the lease expired, with nobody else holding the key: 409 LOCK_LOST', async () => {
    const a = await api.session('a', 20_000);
    const grant = await api.acquire('expire:release-lease', a, 'a', { ttlMillis: 1000 });
    expect(grant.status).toBe(200);
    await waitFor(
      async () => (await api.inspect('expire:release-lease')).body.held === false,
      5_000,
      'the lease to expire',
    );
    const res = await api.release('expire:release-lease', a, grant.body.fencingToken, 'a');
    expect({ status: res.status, body: res.body }).toEqual({ status: 409, body: LOCK_LOST });
    // The key stays free: the late release neither revived nor moved anything.
    const next = await api.acquire('expire:release-lease', a, 'a');
    expect(BigInt(next.body.fencingToken)).toBeGreaterThan(BigInt(grant.body.fencingToken));
  });

  it('release after the session expired, with nobody else holding the key: 409 LOCK_LOST', async () => {
    const a = await api.session('a', 1000);
    const grant = await api.acquire('expire:release-session', a, 'a', { ttlMillis: 30_000 });
    expect(grant.status).toBe(200);
    // Polled through L7, which does not keep the session alive as a heartbeat would.
    await waitFor(
      async () => (await api.inspect('expire:release-session')).body.held === false,
      5_000,
      'the session to expire',
    );
    const res = await api.release('expire:release-session', a, grant.body.fencingToken, 'a');
    expect({ status: res.status, body: res.body }).toEqual({ status: 409, body: LOCK_LOST });
    expect((await api.inspect('expire:release-session')).body.held).toBe(false);
    expect((await api.heartbeat(a, 'a')).status).toBe(410);
  });

  it('a heartbeating session keeps its lock past the original session TTL', async () => {
    const a = await api.session('a', 1000);
    const b = await api.session('b', 20_000);
    const grant = await api.acquire('expire:kept', a, 'a', { ttlMillis: 10_000 });
    for (let i = 0; i < 4; i++) {
      await sleep(400);
      expect((await api.heartbeat(a, 'a')).status).toBe(200);
    }
    expect((await api.acquire('expire:kept', b, 'b')).status).toBe(409);
    expect((await api.inspect('expire:kept')).body.fencingToken).toBe(grant.body.fencingToken);
  });
});
