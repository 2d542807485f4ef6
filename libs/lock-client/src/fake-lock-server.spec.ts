import { ContentionError, LockLostError } from '@dlock/lock-api';
import { LockServerUnavailableError } from './errors';
import { FakeLockServer } from './fake-lock-server.testing';
import { LockClient } from './lock-client';

/**
 * The in-memory lock-server of `@dlock/lock-client/testing`, driven through the
 * real SDK as an application's unit test would (docs/extending.md, "Testing").
 */
function client(server: FakeLockServer, ownerId: string): LockClient {
  return new LockClient({
    baseUrl: 'http://lock-server.test',
    ownerId,
    transport: server.transport,
    random: () => 0,
  });
}

it('grants growing tokens, answers the same session again with the same grant, and frees on release', async () => {
  const server = new FakeLockServer({ firstToken: 9_007_199_254_740_993n });
  const session = await client(server, 'refunds-1').openSession();
  const first = await session.acquire('refund:r-1');
  expect(first.fencingToken).toBe(9_007_199_254_740_993n);
  expect(server.holder('refund:r-1')).toEqual({
    ownerId: 'refunds-1',
    sessionId: session.sessionId,
    fencingToken: 9_007_199_254_740_993n,
  });
  expect(await first.release()).toBe(true);
  expect(server.holder('refund:r-1')).toBeUndefined();
  const second = await session.acquire('refund:r-1');
  expect(second.fencingToken).toBe(9_007_199_254_740_994n);
  await session.close();
  expect(server.holder('refund:r-1')).toBeUndefined();
});

it('a key held by another session is contended: the SDK gives up with ContentionError', async () => {
  const server = new FakeLockServer();
  const holder = await client(server, 'refunds-1').openSession();
  await holder.acquire('refund:r-2');
  const other = await client(server, 'refunds-2').openSession();
  await expect(other.acquire('refund:r-2')).rejects.toBeInstanceOf(ContentionError);
  expect(server.holder('refund:r-2')?.ownerId).toBe('refunds-1');
  await Promise.all([holder.close(), other.close()]);
});

it("revoke: the holder is not told, its renew is LOCK_LOST, and the next grant's token is newer", async () => {
  const server = new FakeLockServer();
  const stale = await client(server, 'refunds-1').openSession();
  const handle = await stale.acquire('refund:r-3');
  expect(server.revoke('refund:r-3')).toBe(handle.fencingToken);
  expect(() => handle.checkStillHeld()).not.toThrow();
  const newer = await client(server, 'refunds-2').openSession();
  const next = await newer.acquire('refund:r-3');
  expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
  await expect(handle.renew()).rejects.toBeInstanceOf(LockLostError);
  expect(() => handle.checkStillHeld()).toThrow(LockLostError);
  expect(await handle.release()).toBe(false);
  await Promise.all([stale.close(), newer.close()]);
});

it('an expired session loses its locks; a server that is down fails every call as UNAVAILABLE', async () => {
  const server = new FakeLockServer();
  const session = await client(server, 'refunds-1').openSession();
  const handle = await session.acquire('refund:r-4');
  server.expireSession(session.sessionId);
  expect(server.holder('refund:r-4')).toBeUndefined();
  await expect(handle.renew()).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
  expect(session.state).toBe('lost');
  server.down = true;
  await expect(client(server, 'refunds-1').openSession()).rejects.toBeInstanceOf(
    LockServerUnavailableError,
  );
});
