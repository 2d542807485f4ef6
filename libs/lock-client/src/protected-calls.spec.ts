import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LockClient } from './lock-client';
import { LockHandle } from './lock-handle';
import { LockSession } from './lock-session';
import { IDLE_SOCKET_MS, nodeHttpTransport } from './transport';
import { LockServerApi } from './wire';
import { PeerUnavailableError } from '@dlock/http-client';
import { LockServerUnavailableError } from './errors';
import { CALL_BUDGETS } from './options';

/**
 * FR-15 at the SDK edge: no code path may send a protected call (L5 renew,
 * L6 release) without the token of the grant it names. A real HTTP server
 * records every request the SDK sends over node:http.
 */
interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

const SID = '0f6b6a8e-9d7e-4d0b-8d7e-2b1a3f4c5d6e';

async function startFakeLockServer(mode: { renew?: 'lost' } = {}) {
  const seen: Seen[] = [];
  let token = 9007199254740990n; // crosses 2^53 during the test
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : undefined;
      const path = req.url ?? '';
      seen.push({ method: req.method ?? '', path, headers: req.headers, body });
      const now = Date.now();
      const at = (ms: number) => new Date(now + ms).toISOString();
      const send = (status: number, payload?: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
        res.end(payload === undefined ? undefined : JSON.stringify(payload));
      };
      const key = decodeURIComponent(path.split('/')[3] ?? '');
      if (req.method === 'POST' && path === '/v1/sessions')
        return send(201, {
          sessionId: SID,
          ownerId: body.ownerId,
          ttlMillis: body.ttlMillis,
          expiresAt: at(body.ttlMillis),
        });
      if (path.endsWith('/heartbeat'))
        return send(200, {
          sessionId: SID,
          expiresAt: at(3_000),
          serverTime: at(0),
          heldLockCount: 0,
        });
      if (req.method === 'DELETE') return send(204);
      if (path.endsWith('/acquire'))
        return send(200, {
          key,
          ownerId: 'w',
          sessionId: SID,
          fencingToken: String(++token),
          acquiredAt: at(0),
          grantProof: 'proof',
          expiresAt: at(body.ttlMillis),
        });
      if (path.endsWith('/renew')) {
        if (mode.renew === 'lost')
          return send(409, {
            code: 'LOCK_LOST',
            message: 'gone',
            retrySafe: false,
            traceId: 'f'.repeat(32),
          });
        return send(200, {
          key,
          ownerId: 'w',
          sessionId: SID,
          fencingToken: req.headers['x-fencing-token'],
          acquiredAt: at(0),
          grantProof: 'proof',
          expiresAt: at(body.ttlMillis),
        });
      }
      send(404, {
        code: 'NOT_FOUND',
        message: 'no route',
        retrySafe: false,
        traceId: 'f'.repeat(32),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    seen,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const isProtected = (s: Seen) =>
  s.path.endsWith('/renew') || (s.method === 'DELETE' && s.path.startsWith('/v1/locks/'));

describe('every protected call carries the explicit token of its grant', () => {
  it('over every SDK path: acquire, renew, release, loss, late release, close', async () => {
    const server = await startFakeLockServer();
    try {
      const client = new LockClient({
        baseUrl: server.url,
        ownerId: 'worker-7',
        sessionTtlMs: 3_000,
        token: () => 'h.p.s',
      });
      const session = await client.openSession();
      const handles: LockHandle[] = [];
      // a is renewed and released at once: a lease long enough for a starved machine.
      const a = await session.acquire('payout:a', { ttlMs: 10_000 });
      const b = (await session.tryAcquire('payout:b', { ttlMs: 5_000 }))!;
      const c = (await session.tryAcquire('payout:c'))!;
      handles.push(a, b, c);
      await a.renew();
      await b.renew({ ttlMs: 2_000 });
      await a.release();
      // b is lost locally at its deadline, then released late (the server may still hold it).
      await new Promise((r) => setTimeout(r, 1_500));
      expect(() => b.checkStillHeld()).toThrow();
      await b.release();
      await session.close();
      await c.release(); // after close: nothing left to send

      const tokens = new Map(handles.map((h) => [h.key, h.fencingToken.toString()]));
      const protectedCalls = server.seen.filter(isProtected);
      expect(protectedCalls.map((s) => `${s.method} ${s.path}`)).toEqual([
        'POST /v1/locks/payout%3Aa/renew',
        'POST /v1/locks/payout%3Ab/renew',
        'DELETE /v1/locks/payout%3Aa',
        'DELETE /v1/locks/payout%3Ab',
      ]);
      for (const call of protectedCalls) {
        const key = decodeURIComponent(call.path.split('/')[3]);
        expect(call.headers['x-fencing-token']).toBe(tokens.get(key));
      }
      // Tokens above 2^53 travel intact.
      expect(c.fencingToken).toBe(9007199254740993n);
      // Every call names its owner; nothing else ever carries a token.
      for (const call of server.seen) expect(call.headers['x-owner-id']).toBe('worker-7');
      // … and carries the caller's service token (docs/security.md).
      for (const call of server.seen) expect(call.headers.authorization).toBe('Bearer h.p.s');
      for (const call of server.seen.filter((s) => !isProtected(s)))
        expect(call.headers['x-fencing-token']).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it('the raw L5/L6 calls refuse to send without a real token', async () => {
    const server = await startFakeLockServer();
    try {
      const api = new LockServerApi(new URL(server.url), 'w', nodeHttpTransport());
      const call = { budget: CALL_BUDGETS.renew };
      await expect(api.renew('k', SID, undefined as any, undefined, call)).rejects.toThrow(
        TypeError,
      );
      await expect(api.release('k', SID, { token: 0n, proof: 'p' }, call)).rejects.toThrow(
        TypeError,
      );
      await expect(api.release('k', SID, { token: '5' as any, proof: 'p' }, call)).rejects.toThrow(
        TypeError,
      );
      expect(server.seen).toEqual([]);
      // @ts-expect-error -- the token is a required parameter: omitting it does not compile.
      const typeCheckOnly = () => api.release('k', SID, call);
      expect(typeof typeCheckOnly).toBe('function');
    } finally {
      await server.close();
    }
  });

  it('the public API has no way to renew or release except through a handle holding its token', () => {
    const publicMethods = (proto: object) =>
      Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor');
    const sessionMethods = publicMethods(LockSession.prototype);
    expect(sessionMethods).not.toContain('renew');
    expect(sessionMethods).not.toContain('release');
    // The handle's renew/release take options only; the token is its own, fixed at grant time.
    const handleToken = Object.getOwnPropertyDescriptor(LockHandle.prototype, 'fencingToken');
    expect(handleToken).toBeUndefined(); // an instance field, not a settable accessor
    expect(publicMethods(LockClient.prototype).sort()).toEqual(['openSession', 'ownerId']);
  });

  it('a lost lock reports LOCK_LOST from renew and sends no further renew', async () => {
    const server = await startFakeLockServer({ renew: 'lost' });
    try {
      const client = new LockClient({ baseUrl: server.url, ownerId: 'w' });
      const session = await client.openSession();
      const lock = (await session.tryAcquire('k'))!;
      await expect(lock.renew()).rejects.toMatchObject({ code: 'LOCK_LOST' });
      await expect(lock.renew()).rejects.toMatchObject({ code: 'LOCK_LOST' });
      expect(server.seen.filter((s) => s.path.endsWith('/renew'))).toHaveLength(1);
      expect(lock.signal.aborted).toBe(true);
      await session.close();
    } finally {
      await server.close();
    }
  });
});

describe('node:http transport: kept-alive connections', () => {
  async function okServer(keepAliveTimeoutMs: number) {
    const server = http.createServer((_req, res) => res.end('{}'));
    server.keepAliveTimeout = keepAliveTimeoutMs;
    const connections: import('node:net').Socket[] = [];
    server.on('connection', (s) => connections.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return {
      connections,
      url: new URL(`http://127.0.0.1:${port}/v1/sessions`),
      close: async () => {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
      },
    };
  }
  const call = (send: ReturnType<typeof nodeHttpTransport>, url: URL) =>
    send({
      method: 'POST',
      url,
      headers: {},
      body: '{}',
      connectTimeoutMs: 300,
      readTimeoutMs: 1_000,
    });

  it('sequential calls share one connection', async () => {
    const server = await okServer(5_000);
    try {
      const send = nodeHttpTransport();
      for (let i = 0; i < 3; i++) expect((await call(send, server.url)).status).toBe(200);
      expect(server.connections).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('a connection the server closed while idle is not reused: the next call connects anew', async () => {
    const server = await okServer(100);
    try {
      const send = nodeHttpTransport();
      await call(send, server.url);
      await new Promise((r) => setTimeout(r, 300));
      expect((await call(send, server.url)).status).toBe(200);
      expect(server.connections).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it('the client closes an idle connection after IDLE_SOCKET_MS, before a node server would (5 s)', async () => {
    const server = await okServer(60_000);
    try {
      await call(nodeHttpTransport(), server.url);
      const started = performance.now();
      await new Promise((r) => server.connections[0].once('close', r));
      const idleMs = performance.now() - started;
      expect(idleMs).toBeGreaterThanOrEqual(IDLE_SOCKET_MS - 100);
      expect(idleMs).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  });
});

describe('node:http transport: separate connect and read timeouts', () => {
  it('a server that accepts but never answers fails in the response phase after the read timeout', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = http.createServer(() => undefined);
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const send = nodeHttpTransport();
      const started = performance.now();
      const failure = await send({
        method: 'POST',
        url: new URL(`http://127.0.0.1:${port}/v1/sessions`),
        headers: {},
        body: '{}',
        connectTimeoutMs: 300,
        readTimeoutMs: 250,
      }).catch((e: unknown) => e);
      const elapsed = performance.now() - started;
      expect(failure).toBeInstanceOf(LockServerUnavailableError);
      expect((failure as LockServerUnavailableError).phase).toBe('response');
      expect(elapsed).toBeGreaterThanOrEqual(240);
      expect(elapsed).toBeLessThan(1_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a refused connection fails in the connect phase', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((r) => probe.close(() => r()));
    const failure = await nodeHttpTransport()({
      method: 'POST',
      url: new URL(`http://127.0.0.1:${port}/`),
      headers: {},
      connectTimeoutMs: 300,
      readTimeoutMs: 1_000,
    }).catch((e: unknown) => e);
    expect(failure).toMatchObject({ phase: 'connect', code: 'UNAVAILABLE' });
    // One error family for every outbound call: code catching the shared layer's error sees it too.
    expect(failure).toBeInstanceOf(LockServerUnavailableError);
    expect(failure).toBeInstanceOf(PeerUnavailableError);
    expect((failure as LockServerUnavailableError).details).toEqual({
      peer: 'lock-server',
      phase: 'connect',
    });
  });

  it('an answer above 64 KiB fails in the response phase instead of being buffered', async () => {
    const server = http.createServer((_req, res) => res.end('x'.repeat(65 * 1024)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const failure = await nodeHttpTransport()({
        method: 'POST',
        url: new URL(`http://127.0.0.1:${port}/v1/sessions`),
        headers: {},
        connectTimeoutMs: 300,
        readTimeoutMs: 1_000,
      }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(LockServerUnavailableError);
      expect(failure).toMatchObject({ phase: 'response', code: 'UNAVAILABLE' });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('an aborted signal stops the call with its reason', async () => {
    const server = http.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const controller = new AbortController();
      const pending = nodeHttpTransport()({
        method: 'POST',
        url: new URL(`http://127.0.0.1:${port}/`),
        headers: {},
        connectTimeoutMs: 300,
        readTimeoutMs: 5_000,
        signal: controller.signal,
      });
      setTimeout(() => controller.abort(new Error('stop')), 50);
      await expect(pending).rejects.toThrow('stop');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
