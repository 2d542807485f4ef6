import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FencedOutError } from '@dlock/lock-api';
import { refusingPort, unacceptingPort } from '@dlock/testing';
import { PeerProtocolError, PeerUnavailableError, type CallBudget } from './errors';
import { HOP_BUDGETS, withHopRetries } from './hop-policy';
import { JsonPeer } from './peer';
import { HttpTransport, IDLE_SOCKET_MS, RESPONSE_BYTES_MAX } from './transport';

interface Seen {
  method?: string;
  url?: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A real local server; each test sets `handler`. Records requests and connections. */
async function startServer(handler: Handler) {
  const seen: Seen[] = [];
  const sockets: Socket[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    seen,
    sockets,
    base: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
type Server = Awaited<ReturnType<typeof startServer>>;

function json(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}

const envelope = (code: string, retrySafe: boolean) =>
  JSON.stringify({ code, message: code, retrySafe, traceId: 't' });

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

const failure = (p: Promise<unknown>) => p.then(() => undefined).catch((e: unknown) => e);

let server: Server;
let peer: JsonPeer;
afterEach(async () => {
  peer?.close();
  await server?.close();
});

describe('phases: could the request have been presented?', () => {
  it('a refused connection is `connect`: never presented', async () => {
    server = await startServer(() => undefined);
    peer = new JsonPeer('p', `http://127.0.0.1:${await refusingPort()}`);
    const err = await failure(
      peer.call({ method: 'POST', path: '/x', budget: HOP_BUDGETS.fencedWrite }),
    );
    expect(err).toBeInstanceOf(PeerUnavailableError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', phase: 'connect', neverPresented: true });
    expect((err as PeerUnavailableError).details).toEqual({ peer: 'p', phase: 'connect' });
    expect((err as Error).message).toMatch(/^p: call failed: .*ECONNREFUSED/);
  });

  it('accepted but unanswered is `response` after the read timeout, not before', async () => {
    server = await startServer(() => undefined);
    peer = new JsonPeer('p', server.base);
    const started = performance.now();
    const err = await failure(
      peer.call({
        method: 'POST',
        path: '/x',
        body: {},
        budget: { connectTimeoutMs: 300, readTimeoutMs: 250 },
      }),
    );
    const elapsedMs = performance.now() - started;
    expect(err).toMatchObject({
      phase: 'response',
      neverPresented: false,
      message: 'p: no response within 250 ms',
    });
    expect((err as Error).cause).toMatchObject({ name: 'TimeoutError' });
    expect(server.seen).toHaveLength(1);
    expect(elapsedMs).toBeGreaterThanOrEqual(240);
  });

  it('a handshake that does not finish is `connect` after the connect timeout', async () => {
    const port = await unacceptingPort();
    peer = new JsonPeer('p', `http://127.0.0.1:${port.port}`);
    try {
      const err = await failure(
        peer.call({
          method: 'GET',
          path: '/x',
          budget: { connectTimeoutMs: 200, readTimeoutMs: 50 },
        }),
      );
      expect(err).toMatchObject({
        phase: 'connect',
        neverPresented: true,
        message: 'p: no connection within 200 ms',
      });
      expect((err as Error).cause).toMatchObject({ name: 'TimeoutError' });
    } finally {
      port.close();
    }
  });

  it('a connection dropped after the request arrived is `response`', async () => {
    server = await startServer((req) => req.socket.destroy());
    peer = new JsonPeer('p', server.base);
    const err = await failure(
      peer.call({ method: 'POST', path: '/x', budget: HOP_BUDGETS.fencedWrite }),
    );
    expect(err).toMatchObject({ phase: 'response' });
    expect(server.seen).toHaveLength(1);
  });

  it('an aborted signal stops the call with its reason', async () => {
    server = await startServer(() => undefined);
    peer = new JsonPeer('p', server.base);
    const controller = new AbortController();
    const pending = peer.call({
      method: 'GET',
      path: '/x',
      budget: { connectTimeoutMs: 300, readTimeoutMs: 5_000 },
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(pending).rejects.toThrow('stop');
  });

  it('an already aborted signal sends nothing', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    const pending = peer.call({
      method: 'GET',
      path: '/x',
      budget: HOP_BUDGETS.advisoryRead,
      signal: AbortSignal.abort(new Error('gone')),
    });
    await expect(pending).rejects.toThrow('gone');
    expect(server.sockets).toEqual([]);
  });
});

describe("a long-lived signal shared by every call (the executor's stop signal)", () => {
  it('holds no abort listener once the calls end: answered, retried, refused or timed out', async () => {
    // Every read is answered 503 first, then 200 on its retry.
    const retried = new Set<string>();
    server = await startServer((req, res) =>
      retried.has(req.url!)
        ? json(res, 200, '{}')
        : (retried.add(req.url!), json(res, 503, envelope('NOT_LEADER', true))),
    );
    peer = new JsonPeer('p', server.base);
    const stop = new AbortController().signal;
    const read = (from: JsonPeer, path = '/x', budget: CallBudget = HOP_BUDGETS.advisoryRead) =>
      withHopRetries(
        'advisoryRead',
        () => from.call({ method: 'GET', path, budget, signal: stop }),
        stop,
      );
    // 16 lanes at once, as the executor's EXECUTOR_CONCURRENCY=16 does.
    await Promise.all(
      Array.from({ length: 16 }, async (_, lane) => {
        for (let i = 0; i < 5; i++) await read(peer, `/x/${lane}/${i}`);
      }),
    );
    const refused = new JsonPeer('q', `http://127.0.0.1:${await refusingPort()}`);
    await failure(read(refused));
    refused.close();
    const silent = await startServer(() => undefined);
    const hanging = new JsonPeer('r', silent.base);
    await failure(read(hanging, '/x', { connectTimeoutMs: 300, readTimeoutMs: 30 }));
    hanging.close();
    await silent.close();
    expect(server.seen).toHaveLength(160);
    expect(getEventListeners(stop, 'abort')).toEqual([]);
  });
});

describe('answers', () => {
  it('an answer above the size cap fails in the `response` phase', async () => {
    server = await startServer((_req, res) => json(res, 200, `"${'x'.repeat(4096)}"`));
    const transport = new HttpTransport({ peer: 'p', responseBytesMax: 1024 });
    try {
      const err = await failure(
        transport.send({
          method: 'GET',
          url: new URL('/x', server.base),
          headers: {},
          connectTimeoutMs: 300,
          readTimeoutMs: 1_000,
        }),
      );
      expect(err).toBeInstanceOf(PeerUnavailableError);
      expect(err).toMatchObject({ phase: 'response', message: 'p: answer exceeds 1024 bytes' });
      expect((err as Error).cause).toBeInstanceOf(RangeError);
    } finally {
      transport.close();
    }
  });

  it('without a cap of its own a transport reads at most RESPONSE_BYTES_MAX (1 MiB)', async () => {
    const body = (n: number) => `"${'x'.repeat(n - 2)}"`;
    server = await startServer((req, res) =>
      json(res, 200, body(req.url === '/at' ? RESPONSE_BYTES_MAX : RESPONSE_BYTES_MAX + 1)),
    );
    peer = new JsonPeer('p', server.base);
    const budget = HOP_BUDGETS.fencedWrite;
    expect(await peer.call({ method: 'GET', path: '/at', budget })).toHaveLength(
      RESPONSE_BYTES_MAX - 2,
    );
    const err = await failure(peer.call({ method: 'GET', path: '/over', budget }));
    expect(err).toMatchObject({
      phase: 'response',
      message: `p: answer exceeds ${RESPONSE_BYTES_MAX} bytes`,
    });
  });

  it('2^53+1 goes out as a decimal string and an int64 answer comes back exact', async () => {
    server = await startServer((_req, res) => json(res, 200, '{"t":9007199254740993,"n":2}'));
    peer = new JsonPeer('p', server.base);
    const answer = await peer.call({
      method: 'POST',
      path: '/x',
      body: { token: 2n ** 53n + 1n },
      budget: HOP_BUDGETS.fencedWrite,
    });
    expect(server.seen[0].body).toBe('{"token":"9007199254740993"}');
    expect(answer).toEqual({ t: 9007199254740993n, n: 2 });
  });

  it('sends the read timeout as the deadline header; trace context is left to OpenTelemetry', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    await peer.call({ method: 'GET', path: '/a', budget: HOP_BUDGETS.advisoryRead });
    await peer.call({ method: 'GET', path: '/b', budget: HOP_BUDGETS.fencedWrite });
    expect(server.seen[0].headers['x-request-deadline-ms']).toBe('1000');
    expect(server.seen[1].headers['x-request-deadline-ms']).toBe('3000');
    // No SDK started in this process: nothing adds a traceparent (libs/tracing does, in the apps).
    expect(server.seen[0].headers.traceparent).toBeUndefined();
  });

  it('sends the provider’s current token on every call, asking it each time (rotation)', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    const tokens = ['a.b.c', 'd.e.f'];
    let asked = 0;
    peer = new JsonPeer('p', server.base, { token: () => tokens[asked++] });
    await peer.call({ method: 'GET', path: '/a', budget: HOP_BUDGETS.advisoryRead });
    await peer.call({ method: 'POST', path: '/b', body: {}, budget: HOP_BUDGETS.fencedWrite });
    expect(server.seen.map((s) => s.headers.authorization)).toEqual([
      'Bearer a.b.c',
      'Bearer d.e.f',
    ]);
  });

  it('adds the extra headers of every call; the call’s own headers and the token win', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    const actingFor = ['p1.q.r', 'p2.q.r'];
    let asked = 0;
    peer = new JsonPeer('p', server.base, {
      token: () => 'a.b.c',
      headers: () => ({
        'x-acting-for': actingFor[asked++],
        authorization: 'Bearer forged.x.y',
        'x-owner-id': 'extra',
      }),
    });
    await peer.call({ method: 'GET', path: '/a', budget: HOP_BUDGETS.advisoryRead });
    await peer.call({
      method: 'POST',
      path: '/b',
      headers: { 'x-owner-id': 'own' },
      body: {},
      budget: HOP_BUDGETS.fencedWrite,
    });
    expect(
      server.seen.map((s) => [
        s.headers['x-acting-for'],
        s.headers.authorization,
        s.headers['x-owner-id'],
      ]),
    ).toEqual([
      ['p1.q.r', 'Bearer a.b.c', 'extra'],
      ['p2.q.r', 'Bearer a.b.c', 'own'],
    ]);
  });

  it('a peer given no token provider sends no Authorization header', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    await peer.call({ method: 'GET', path: '/a', budget: HOP_BUDGETS.advisoryRead });
    expect(server.seen[0].headers.authorization).toBeUndefined();
  });

  it.each([
    [409, envelope('FENCED_OUT', false), FencedOutError, { code: 'FENCED_OUT', httpStatus: 409 }],
    [502, '<html>bad gateway</html>', PeerUnavailableError, { phase: 'response' }],
    [404, 'not json', PeerProtocolError, { code: 'INTERNAL', httpStatus: 404 }],
    [200, '{"a":', PeerProtocolError, { code: 'INTERNAL', httpStatus: 200 }],
  ])('HTTP %p %p → %p', async (status, text, type, fields) => {
    server = await startServer((_req, res) => json(res, status, text));
    peer = new JsonPeer('p', server.base);
    const err = await failure(
      peer.call({ method: 'GET', path: '/x', budget: HOP_BUDGETS.advisoryRead }),
    );
    expect(err).toBeInstanceOf(type);
    expect(err).toMatchObject(fields);
  });
});

describe('connections', () => {
  it('sequential calls share one kept-alive connection', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    for (let i = 0; i < 3; i++)
      await peer.call({ method: 'GET', path: '/x', budget: HOP_BUDGETS.advisoryRead });
    expect(server.seen).toHaveLength(3);
    expect(server.sockets).toHaveLength(1);
  });

  it('close() drops the pooled connections', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    await peer.call({ method: 'GET', path: '/x', budget: HOP_BUDGETS.advisoryRead });
    const closed = new Promise((r) => server.sockets[0].once('close', r));
    peer.close();
    // Well before the idle close (IDLE_SOCKET_MS) would do it.
    const late = new Promise((_r, reject) =>
      setTimeout(() => reject(new Error('still open')), IDLE_SOCKET_MS / 2),
    );
    await Promise.race([closed, late]);
  });

  it('the client closes an idle connection after IDLE_SOCKET_MS, before a node server would (5 s)', async () => {
    server = await startServer((_req, res) => json(res, 200, '{}'));
    peer = new JsonPeer('p', server.base);
    await peer.call({ method: 'GET', path: '/x', budget: HOP_BUDGETS.advisoryRead });
    const started = performance.now();
    await new Promise((r) => server.sockets[0].once('close', r));
    const idleMs = performance.now() - started;
    expect(idleMs).toBeGreaterThanOrEqual(IDLE_SOCKET_MS - 100);
    expect(idleMs).toBeLessThan(5_000);
  });
});

describe('a connection opened ahead of its one request (the rail-proxy, docs/rail.md)', () => {
  let transport: HttpTransport;
  beforeEach(() => {
    transport = new HttpTransport({ peer: 'p' });
  });
  afterEach(() => transport.close());

  const post = (base: string, connection: Socket, readTimeoutMs = 1_000) =>
    transport.send({
      method: 'POST',
      url: new URL('/submit', base),
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
      connectTimeoutMs: 0,
      readTimeoutMs,
      connection,
    });

  it('connect writes nothing; the one request goes on that connection, which then closes', async () => {
    server = await startServer((_req, res) => json(res, 200, '{"ok":true}'));
    const connection = await transport.connect(new URL(server.base), 1_000);
    await waitUntil(() => server.sockets.length === 1);
    expect(server.seen).toEqual([]);
    expect(await post(server.base, connection, 700)).toEqual({ status: 200, text: '{"ok":true}' });
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]).toMatchObject({ method: 'POST', url: '/submit', body: '{"a":1}' });
    expect(server.seen[0].headers).toMatchObject({
      connection: 'close',
      'x-request-deadline-ms': '700',
    });
    expect(server.sockets).toHaveLength(1);
    expect(connection.destroyed).toBe(true);
  });

  it('a refused connect is `connect`, with the socket error as its cause', async () => {
    const err = await failure(
      transport.connect(new URL(`http://127.0.0.1:${await refusingPort()}`), 1_000),
    );
    expect(err).toBeInstanceOf(PeerUnavailableError);
    expect(err).toMatchObject({ phase: 'connect', neverPresented: true });
    expect((err as Error).message).toMatch(/^p: connect failed: .*ECONNREFUSED/);
    expect((err as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a handshake that does not finish is `connect` after the connect timeout', async () => {
    const port = await unacceptingPort();
    try {
      const started = performance.now();
      const err = await failure(transport.connect(new URL(`http://127.0.0.1:${port.port}`), 200));
      expect(performance.now() - started).toBeGreaterThanOrEqual(190);
      expect(err).toMatchObject({ phase: 'connect', message: 'p: no connection within 200 ms' });
      expect((err as Error).cause).toMatchObject({ name: 'TimeoutError' });
    } finally {
      port.close();
    }
  });

  it.each([
    ['ended', (s: Socket) => s.end()],
    ['reset', (s: Socket) => s.resetAndDestroy()],
  ])(
    'a connection the peer %s before the write is `connect`: nothing was presented',
    async (_how, close) => {
      server = await startServer(() => undefined);
      const connection = await transport.connect(new URL(server.base), 1_000);
      await waitUntil(() => server.sockets.length === 1);
      close(server.sockets[0]);
      // (events.once would reject on the reset's 'error')
      await new Promise((r) => connection.once('close', r));
      const err = await failure(post(server.base, connection));
      expect(err).toBeInstanceOf(PeerUnavailableError);
      expect(err).toMatchObject({
        phase: 'connect',
        neverPresented: true,
        message: 'p: connection closed before the request was written',
      });
      expect(server.seen).toEqual([]);
    },
  );

  it('a connection the peer drops after the request arrived is `response`, and closed', async () => {
    server = await startServer((req) => req.socket.destroy());
    const connection = await transport.connect(new URL(server.base), 1_000);
    const err = await failure(post(server.base, connection));
    expect(err).toMatchObject({ phase: 'response', neverPresented: false });
    expect(server.seen).toHaveLength(1);
    expect(connection.destroyed).toBe(true);
  });
});

describe('retries happen only where the contract allows them (real server)', () => {
  /** Answers the scripted statuses in order, then 200. */
  async function scripted(...answers: (number | 'hang')[]) {
    server = await startServer((_req, res) => {
      const next = answers.shift() ?? 200;
      if (next === 'hang') return;
      if (next === 200) json(res, 200, '{"ok":true}');
      else json(res, next, envelope(next === 503 ? 'NOT_LEADER' : 'FENCED_OUT', next === 503));
    });
    peer = new JsonPeer('p', server.base);
  }
  const budget = { connectTimeoutMs: 300, readTimeoutMs: 300 };
  const send = () => peer.call({ method: 'POST', path: '/w', body: {}, budget });

  it('a fenced write is re-sent once after a 503', async () => {
    await scripted(503);
    await expect(withHopRetries('fencedWrite', send)).resolves.toEqual({ ok: true });
    expect(server.seen).toHaveLength(2);
  });

  it('a fenced write is not re-sent after no answer (it may have landed) nor after a 409', async () => {
    await scripted('hang');
    await expect(withHopRetries('fencedWrite', send)).rejects.toMatchObject({ phase: 'response' });
    expect(server.seen).toHaveLength(1);
    await server.close();
    await scripted(409);
    await expect(withHopRetries('fencedWrite', send)).rejects.toBeInstanceOf(FencedOutError);
    expect(server.seen).toHaveLength(1);
  });

  it('a submit is never re-sent, not even after a 503', async () => {
    await scripted(503);
    await expect(withHopRetries('submit', send)).rejects.toMatchObject({ httpStatus: 503 });
    expect(server.seen).toHaveLength(1);
  });

  it('an advisory read tries 3 times at most, through no-answer and 503 alike', async () => {
    await scripted('hang', 503, 503, 503);
    await expect(withHopRetries('advisoryRead', send)).rejects.toMatchObject({ httpStatus: 503 });
    expect(server.seen).toHaveLength(3);
  });
});
