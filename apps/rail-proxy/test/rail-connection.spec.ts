import http from 'node:http';
import net from 'node:net';
import { DlockError } from '@dlock/lock-api';
import { RequestDeadline } from '@dlock/http-contract';
import { sleep, unacceptingPort, waitFor } from '@dlock/testing';
import { readRailProxyConfig } from '../src/config';
import { RailClient, type RailConnection } from '../src/submission/clients/rail.client';

/** Settings every proxy needs that the rail call itself never reads. */
const NOT_USED_HERE = {
  PROXYDB_URL: 'postgres://unused@127.0.0.1:1/unused',
  AUTH_JWKS: '/unused/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/run/dlock/policy.yaml',
  GRANT_JWKS: '/unused/grant-keys.jwks.json',
  INSTRUCTION_JWKS: '/unused/instruction-keys.jwks.json',
  RECEIPT_SIGNING_KEYS: '/unused/receipt-keys.json',
};

/**
 * The proxy's one rail call over real TCP, in this process, against a small
 * scripted rail: what reached the rail, and how each answer (or silence) is
 * classified. The spawned-proxy tests show the same against the real
 * rail-stub; these let the mutation run (npm run test:mutation) see it.
 */
type Script = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

describe('rail-proxy RailClient over real TCP', () => {
  let server: http.Server;
  let script: Script;
  const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] =
    [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        script(req, res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  /** The rail's side of the next connection, and a promise of its close. */
  function nextRailSocket(): Promise<{ socket: net.Socket; closed: Promise<unknown> }> {
    return new Promise((resolve) =>
      server.once('connection', (socket: net.Socket) =>
        resolve({ socket, closed: new Promise((r) => socket.once('close', r)) }),
      ),
    );
  }

  function client(env: Record<string, string> = {}, path = ''): RailClient {
    const { port } = server.address() as net.AddressInfo;
    return new RailClient(
      readRailProxyConfig({
        ...NOT_USED_HERE,
        RAIL_STUB_URL: `http://127.0.0.1:${port}${path}`,
        RAIL_CONNECT_TIMEOUT_MS: '2000',
        RAIL_READ_TIMEOUT_MS: '400',
        ...env,
      }),
    );
  }

  async function connected(c: RailClient, budgetMs = 10_000): Promise<RailConnection> {
    const result = await c.connect(new RequestDeadline(budgetMs));
    if (!result.ok) throw new Error(`connect failed: ${result.reason}`);
    return result.connection;
  }

  const transfer = { clientRef: 'payout-x', amountMinor: 12_345, currency: 'EUR' };

  it('presents the transfer once, to <url path>/submit, and reads a well-formed ack', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ railReference: 'rr-1', acceptedAt: '2030-01-01T00:00:00.000Z' }));
    };
    const connection = await connected(client({}, '/rail//'));
    expect(await connection.present(transfer)).toEqual({ kind: 'acked', railReference: 'rr-1' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/rail/submit' });
    expect(JSON.parse(seen[0].body)).toEqual(transfer);
    expect(seen[0].headers['content-type']).toBe('application/json');
    expect(seen[0].headers['content-length']).toBe(String(Buffer.byteLength(seen[0].body)));
    expect(seen[0].headers['x-fencing-token']).toBeUndefined();
    // One request per connection: the rail is told so, and keeps nothing open.
    expect(seen[0].headers.connection).toBe('close');
    // The rail is told how long the proxy will wait: at most the read timeout.
    const deadlineMs = Number(seen[0].headers['x-request-deadline-ms']);
    expect(deadlineMs).toBeGreaterThan(0);
    expect(deadlineMs).toBeLessThanOrEqual(400);
    expect(() => connection.present(transfer)).toThrow('presented at most once');
  });

  it('a decline is a decline; a 5xx, another status or an oversized body may have paid', async () => {
    const answers: [number, string, unknown][] = [
      [402, '{}', { kind: 'declined', status: 402 }],
      [503, '{}', { kind: 'ambiguous', reason: 'rail-5xx', status: 503 }],
      [409, '{}', { kind: 'ambiguous', reason: 'unexpected-status', status: 409 }],
      [200, 'x'.repeat(64 * 1024), { kind: 'ambiguous', reason: 'malformed-ack', status: 200 }],
      [200, 'x'.repeat(64 * 1024 + 1), { kind: 'ambiguous', reason: 'malformed-ack' }],
      // A well-formed ack past the 64 KiB the proxy reads is not taken as an ack.
      [
        200,
        JSON.stringify({ railReference: 'rr-1', acceptedAt: '2030-01-01T00:00:00.000Z' }) +
          ' '.repeat(64 * 1024),
        { kind: 'ambiguous', reason: 'malformed-ack' },
      ],
    ];
    for (const [status, body, expected] of answers) {
      script = (_req, res) => {
        res.writeHead(status);
        res.end(body);
      };
      const connection = await connected(client());
      expect(await connection.present(transfer)).toEqual(expected);
    }
  });

  it('a rail that stays silent past the read timeout is ambiguous (read-timeout)', async () => {
    script = () => undefined; // never answers
    const connection = await connected(client());
    expect(await connection.present(transfer)).toEqual({
      kind: 'ambiguous',
      reason: 'read-timeout',
    });
    expect(seen).toHaveLength(1);
  });

  it('a rail that drops the connection after reading the request is ambiguous (connection-reset)', async () => {
    script = (req) => req.socket.destroy();
    const connection = await connected(client());
    expect(await connection.present(transfer)).toEqual({
      kind: 'ambiguous',
      reason: 'connection-reset',
    });
  });

  it('a rail that dies mid-answer is ambiguous (connection-reset)', async () => {
    script = (req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('{"railRef');
      setTimeout(() => req.socket.destroy(), 20);
    };
    const connection = await connected(client());
    expect(await connection.present(transfer)).toEqual({
      kind: 'ambiguous',
      reason: 'connection-reset',
    });
  });

  it('a read of exactly the shortest allowed length is started', async () => {
    script = (_req, res) => {
      res.writeHead(402);
      res.end('{}');
    };
    // Read limit = minimum: with time to spare the read is the minimum itself.
    const connection = await connected(client({ RAIL_READ_TIMEOUT_MIN_MS: '400' }));
    expect(await connection.present(transfer)).toEqual({ kind: 'declined', status: 402 });
    expect(seen).toHaveLength(1);
  });

  it('nothing is presented when too little of the deadline is left for the shortest read', async () => {
    script = () => {
      throw new Error('the rail must see nothing');
    };
    // RAIL_READ_TIMEOUT_MIN_MS defaults to 100 (a quarter of 400); 150 ms minus the
    // 100 ms margin leaves at most 50.
    const railClosed = nextRailSocket().then(({ closed }) => closed);
    const connection = await connected(client(), 150);
    expect(await connection.present(transfer)).toEqual({
      kind: 'not-presented',
      reason: 'deadline-too-short',
    });
    // The unused connection is closed, not left to the rail.
    await railClosed;

    // Closed by the rail as well: that is the reason given (the intent's error_code).
    const railToo = nextRailSocket();
    const closed = await connected(client(), 150);
    const { socket, closed: closedAtRail } = await railToo;
    socket.end();
    await closedAtRail;
    expect(await closed.present(transfer)).toEqual({
      kind: 'not-presented',
      reason: 'connection-closed-before-write',
    });
    expect(seen).toEqual([]);
  });

  it('an abandoned connection, or one the rail closed before the write, presents nothing', async () => {
    script = () => {
      throw new Error('the rail must see nothing');
    };
    const railClosed = nextRailSocket().then(({ closed }) => closed);
    const abandoned = await connected(client());
    abandoned.abandon();
    expect(() => abandoned.present(transfer)).toThrow('presented at most once');
    await railClosed;

    const sockets = new Set<net.Socket>();
    const onConnection = (s: net.Socket) => sockets.add(s);
    server.on('connection', onConnection);
    try {
      const closed = await connected(client());
      await waitFor(async () => sockets.size === 1, 5_000, 'the rail to see the connection');
      const [socket] = sockets;
      // The rail's side closes once the proxy's side has read the FIN and ended too.
      const closedAtRail = new Promise((resolve) => socket.once('close', resolve));
      socket.end();
      await closedAtRail;
      expect(await closed.present(transfer)).toEqual({
        kind: 'not-presented',
        reason: 'connection-closed-before-write',
      });
    } finally {
      server.off('connection', onConnection);
    }
    expect(seen).toEqual([]);
  });

  it('a rail that resets the connection before the write was presented nothing', async () => {
    script = () => {
      throw new Error('the rail must see nothing');
    };
    const rail = nextRailSocket();
    const connection = await connected(client());
    const { socket, closed } = await rail;
    socket.resetAndDestroy();
    await closed;
    // The reset is on the loopback already; the proxy's side reads it on its next poll.
    await sleep(100);
    expect(await connection.present(transfer)).toEqual({
      kind: 'not-presented',
      reason: 'connection-closed-before-write',
    });
    expect(seen).toEqual([]);
  });

  it('a rail that does not finish the handshake in RAIL_CONNECT_TIMEOUT_MS is a failed connect', async () => {
    const port = await unacceptingPort();
    try {
      const c = new RailClient(
        readRailProxyConfig({
          ...NOT_USED_HERE,
          RAIL_STUB_URL: `http://127.0.0.1:${port.port}`,
          RAIL_CONNECT_TIMEOUT_MS: '200',
        }),
      );
      expect(await c.connect(new RequestDeadline(10_000))).toEqual({
        ok: false,
        reason: 'connect-timeout',
      });
    } finally {
      port.close();
    }
  });

  it('a rail nobody listens on is a failed connect, not a presentation', async () => {
    const unused = net.createServer();
    await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve));
    const { port } = unused.address() as net.AddressInfo;
    await new Promise<void>((resolve) => unused.close(() => resolve()));
    const c = new RailClient(
      readRailProxyConfig({
        ...NOT_USED_HERE,
        RAIL_STUB_URL: `http://127.0.0.1:${port}`,
      }),
    );
    expect(await c.connect(new RequestDeadline(10_000))).toEqual({
      ok: false,
      reason: 'ECONNREFUSED',
    });
  });

  it('refuses, retry-safe, a caller deadline that cannot cover a connect and the shortest read', () => {
    const c = client(); // needs 100 margin + 2000 connect + 100 shortest read
    // The earlier of the caller's deadline and the proxy's own budget (2000 + 400 + 500).
    const caller = new RequestDeadline(2_500);
    expect(c.deadlineFor(caller)).toBe(caller);
    expect(c.deadlineFor(new RequestDeadline(5_000)).budgetMs).toBe(2_900);
    let caught: unknown;
    try {
      c.deadlineFor(new RequestDeadline(2_150));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(DlockError);
    expect((caught as DlockError).code).toBe('RAIL_UNAVAILABLE');
    expect((caught as DlockError).details).toMatchObject({
      reason: 'deadline-too-short',
      requiredMs: 2_200,
    });
    expect(c.deadlineFor(undefined).budgetMs).toBe(2_900);
  });
});
