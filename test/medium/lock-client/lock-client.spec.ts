import {
  ContentionError,
  LockClient,
  LockLostError,
  nodeHttpTransport,
  type LockClientOptions,
  type LockHandle,
  type SessionLostFields,
  type Transport,
} from '@dlock/lock-client';
import {
  TcpProxy,
  http,
  migratedDatabase,
  sleep,
  spawnApp,
  waitFor,
  type RunningApp,
  testTokenProvider,
} from '@dlock/testing';

/**
 * The SDK against a real lock-server process (pg backend) over real HTTP:
 * round trip, contention, loss detection under a paused server (SIGSTOP)
 * and a network cut (TCP blackhole), and session close. Short TTLs keep the
 * file to a few seconds per scenario.
 */
jest.setTimeout(30_000);

let server: RunningApp;
let proxy: TcpProxy;

beforeAll(async () => {
  const lockdb = await migratedDatabase('lockdb');
  server = await spawnApp('lock-server', {
    LOCKDB_URL: lockdb,
    LOCK_BACKEND: 'pg',
    // Quick retries keep the contention scenario short; the budget is still 6 attempts (5 retries).
    LOCK_CONTENDED_RETRY_AFTER_MAX_MS: '100',
  });
  proxy = await TcpProxy.start({ target: { port: server.port } });
});

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

function client(ownerId: string, extra: Partial<LockClientOptions> = {}) {
  const safety: SessionLostFields[] = [];
  const lockClient = new LockClient({
    baseUrl: server.url,
    ownerId,
    token: testTokenProvider(ownerId),
    // 3 s: the client gives up 900 ms before the server, ample for a loaded 2-core box.
    sessionTtlMs: 3_000,
    lockTtlMs: 3_000,
    events: { onSafetyEvent: (_event, fields) => void safety.push(fields) },
    ...extra,
  });
  return { lockClient, safety };
}

async function lockInfo(key: string) {
  const res = await http('GET', `${server.url}/v1/locks/${key}`);
  expect(res.status).toBe(200);
  return res.body as { held: boolean; fencingToken?: string; ownerId?: string };
}

/** Waits (bounded) until another session can take the key, and returns the grant. */
async function takeOver(key: string): Promise<LockHandle> {
  const { lockClient } = client('worker-next');
  const session = await lockClient.openSession({ ttlMs: 10_000 });
  return waitFor(() => session.tryAcquire(key, { ttlMs: 10_000 }), 8_000, `${key} to be free`);
}

/** Records when (wall clock, for comparison with the server's instants) loss was signalled. */
function watchLoss(lock: LockHandle) {
  const seen: { atMs: number; checkThrew: boolean; signalAborted: boolean }[] = [];
  lock.onLockLost(() => {
    let checkThrew = false;
    try {
      lock.checkStillHeld();
    } catch (err) {
      checkThrew = err instanceof LockLostError;
    }
    seen.push({ atMs: Date.now(), checkThrew, signalAborted: lock.signal.aborted });
  });
  return seen;
}

it('acquire, renew and release round trip', async () => {
  const { lockClient, safety } = client('worker-a');
  const session = await lockClient.openSession({ ttlMs: 1_500 });
  // A lease well past the sleep below: a loaded machine must not make the renew come too late.
  const lock = await session.acquire('lc:round-trip', { ttlMs: 8_000 });
  expect(typeof lock.fencingToken).toBe('bigint');
  expect(lock.fencingToken).toBeGreaterThan(0n);
  expect(await lockInfo('lc:round-trip')).toMatchObject({
    held: true,
    ownerId: 'worker-a',
    fencingToken: lock.fencingToken.toString(),
  });
  // Outlive two session TTLs: only the heartbeat timer keeps the session alive.
  await sleep(3_200);
  expect(() => lock.checkStillHeld()).not.toThrow();
  expect(session.state).toBe('open');
  const before = lock.expiresAt.getTime();
  await lock.renew();
  expect(lock.expiresAt.getTime()).toBeGreaterThan(before);
  expect(lock.remainingMs()).toBeGreaterThan(0);
  expect(await lockInfo('lc:round-trip')).toMatchObject({
    fencingToken: lock.fencingToken.toString(),
  });
  await expect(lock.release()).resolves.toBe(true);
  expect(await lockInfo('lc:round-trip')).toMatchObject({ held: false });
  expect(() => lock.checkStillHeld()).toThrow(LockLostError);
  await session.close();
  expect(safety).toEqual([]);
});

it('contention: tryAcquire returns null, acquire throws ContentionError after 6 attempts (5 retries)', async () => {
  const holder = await client('worker-holder').lockClient.openSession();
  const held = await holder.acquire('lc:contended', { ttlMs: 10_000 });
  let acquireCalls = 0;
  const base = nodeHttpTransport();
  const counting: Transport = (req) => {
    if (req.url.pathname.endsWith('/acquire')) acquireCalls++;
    return base(req);
  };
  const other = await client('worker-other', { transport: counting }).lockClient.openSession();
  await expect(other.tryAcquire('lc:contended')).resolves.toBeNull();
  expect(acquireCalls).toBe(1);
  acquireCalls = 0;
  const failure = await other.acquire('lc:contended').catch((e: unknown) => e);
  expect(failure).toBeInstanceOf(ContentionError);
  expect(failure).toMatchObject({
    code: 'CONTENTION_EXCEEDED',
    retrySafe: true,
    details: { attempts: 6 },
  });
  expect(acquireCalls).toBe(6);
  await held.release();
  const next = await other.acquire('lc:contended');
  expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
  await Promise.all([holder.close(), other.close()]);
});

it('lock-server paused (SIGSTOP): loss is signalled before the server expiry; the next token is larger', async () => {
  const { lockClient, safety } = client('worker-paused');
  const session = await lockClient.openSession();
  const lock = await session.acquire('lc:paused');
  const seen = watchLoss(lock);
  const serverExpiryMs = lock.expiresAt.getTime();
  server.pause();
  try {
    await waitFor(async () => seen.length > 0, 5_000, 'onLockLost while the server is paused');
  } finally {
    server.resume();
  }
  expect(seen).toHaveLength(1);
  expect(seen[0].checkThrew).toBe(true);
  expect(seen[0].signalAborted).toBe(true);
  expect(seen[0].atMs).toBeLessThan(serverExpiryMs);
  expect(() => lock.checkStillHeld()).toThrow(LockLostError);
  expect(safety).toMatchObject([
    { scope: 'session', reason: 'session_deadline', lostLockCount: 1 },
  ]);
  const next = await takeOver('lc:paused');
  expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
  // The stale holder's release cannot touch the newer grant (compare-and-delete on its token).
  await lock.release();
  expect(await lockInfo('lc:paused')).toMatchObject({
    held: true,
    fencingToken: next.fencingToken.toString(),
  });
  await next.release();
});

it('network cut (TCP blackhole): loss is signalled before the server expiry; the next token is larger', async () => {
  const { lockClient, safety } = client('worker-cut', { baseUrl: proxy.url });
  const session = await lockClient.openSession();
  const lock = await session.acquire('lc:cut');
  const seen = watchLoss(lock);
  const serverExpiryMs = lock.expiresAt.getTime();
  proxy.setFault({ kind: 'blackhole' });
  try {
    await waitFor(async () => seen.length > 0, 5_000, 'onLockLost behind a blackhole');
    expect(seen[0].checkThrew).toBe(true);
    expect(seen[0].signalAborted).toBe(true);
    expect(seen[0].atMs).toBeLessThan(serverExpiryMs);
    expect(safety).toMatchObject([{ scope: 'session', lostLockCount: 1 }]);
    // The next holder talks to the server directly and wins once the lease has lapsed.
    const next = await takeOver('lc:cut');
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  } finally {
    proxy.setFault({ kind: 'none' });
  }
});

it('closing a session releases its locks on the server', async () => {
  const { lockClient, safety } = client('worker-closing');
  const session = await lockClient.openSession({ ttlMs: 30_000 });
  const a = await session.acquire('lc:close-a', { ttlMs: 30_000 });
  const b = await session.acquire('lc:close-b', { ttlMs: 30_000 });
  const lost: string[] = [];
  a.onLockLost((e) => lost.push(String(e.details?.reason)));
  await session.close();
  expect(lost).toEqual(['session_closed']);
  expect(() => b.checkStillHeld()).toThrow(LockLostError);
  expect(await lockInfo('lc:close-a')).toMatchObject({ held: false });
  expect(await lockInfo('lc:close-b')).toMatchObject({ held: false });
  expect(safety).toMatchObject([{ reason: 'session_closed', scope: 'session', lostLockCount: 2 }]);
  const other = await client('worker-after').lockClient.openSession();
  const again = await other.tryAcquire('lc:close-a');
  expect(again).not.toBeNull();
  expect(again!.fencingToken).toBeGreaterThan(a.fencingToken);
  await other.close();
});

it('a release still in flight cannot free the grant of a re-acquire on the same session', async () => {
  // DELETEs of locks go through a proxy that holds every chunk 800 ms; the rest goes direct.
  const slow = await TcpProxy.start({ target: { port: server.port } });
  try {
    slow.setFault({ kind: 'latency', ms: 800 });
    const base = nodeHttpTransport();
    const deletesSlow: Transport = (req) =>
      base(
        req.method === 'DELETE' && req.url.pathname.startsWith('/v1/locks/')
          ? { ...req, url: new URL(req.url.pathname, slow.url) }
          : req,
      );
    const { lockClient, safety } = client('worker-again', { transport: deletesSlow });
    const session = await lockClient.openSession({ ttlMs: 10_000 });
    const first = await session.acquire('lc:again', { ttlMs: 10_000 });
    const released = first.release();
    // Acquired again while that DELETE is on its way: the server would answer the same
    // grant, and the DELETE landing after it would free the key under the new handle.
    const again = await session.acquire('lc:again', { ttlMs: 10_000 });
    await released;
    // The handle says held, and so does the server: the old DELETE freed nothing.
    expect(() => again.checkStillHeld()).not.toThrow();
    expect(await lockInfo('lc:again')).toMatchObject({
      held: true,
      fencingToken: again.fencingToken.toString(),
    });
    // Because the SDK settled that release first, the key came back under a new token.
    expect(again.fencingToken).toBeGreaterThan(first.fencingToken);
    await expect(again.release()).resolves.toBe(true);
    await session.close();
    expect(safety).toEqual([]);
  } finally {
    await slow.close();
  }
});
