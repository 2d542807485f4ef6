import http from 'node:http';
import net from 'node:net';
import type { TokenProvider } from '@dlock/identity';
import { requestDeadlineHeader } from '@dlock/lock-api';
import { withTraceHeaders } from '@dlock/tracing/outbound';
import {
  abortReason,
  peerUnavailable,
  type PeerUnavailableError,
  type TransportPhase,
  type UnavailableErrorFactory,
} from './errors';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: URL;
  headers: Record<string, string>;
  /** Already-serialised body (JSON for every hop here). */
  body?: string;
  connectTimeoutMs: number;
  readTimeoutMs: number;
  signal?: AbortSignal;
  /**
   * A connection from `connect()` to write this one request on, closed after
   * it (connectTimeoutMs is then unused); without it, a pooled connection.
   */
  connection?: net.Socket;
}

export interface HttpResponse {
  status: number;
  /** Raw body text; parsed by the caller so int64 fields survive. */
  text: string;
}

/** One HTTP exchange, no retries (retries live in hop-policy.ts and the SDK's retry-policy.ts). */
export type Transport = (request: HttpRequest) => Promise<HttpResponse>;

/** Below node:http's server keepAliveTimeout (5 s): the client closes an idle connection first. */
export const IDLE_SOCKET_MS = 4_000;
/** Default answer size cap; every answer of the contract is a few KiB at most. */
export const RESPONSE_BYTES_MAX = 1024 * 1024;
const MAX_SOCKETS = 64;

export interface TransportOptions {
  /** Names the peer in errors (`lock-server`, `payment-resource` …). */
  peer: string;
  responseBytesMax?: number;
  unavailable?: UnavailableErrorFactory;
  /** The caller's service token, sent as `Authorization: Bearer` on every call (docs/security.md). */
  token?: TokenProvider;
  /** Extra headers of every call, e.g. a delegating caller's X-Acting-For (docs/security.md). */
  headers?: HeaderProvider;
}

/** Headers to add to every request, asked for on each one. */
export type HeaderProvider = () => Record<string, string>;

/**
 * Adds `headers()` to every request; the request's own headers win, so an
 * extra header never replaces its token, owner or fencing token.
 */
export function withHeaders(send: Transport, headers: HeaderProvider): Transport {
  return (request) => send({ ...request, headers: { ...headers(), ...request.headers } });
}

/** Asks the provider on every request, so a rotated token is used without a restart. */
export function withBearerToken(send: Transport, token: TokenProvider): Transport {
  return async (request) =>
    send({ ...request, headers: { ...request.headers, authorization: `Bearer ${await token()}` } });
}

/**
 * The transport every service-to-service call uses (bench/reports/http-client.md
 * for the choice of node:http). The connect timer runs until TCP is up, the
 * read timer from then until the last byte. Connections are kept alive (a
 * connection per call cost the lock-server a third of its CPU per grant) and
 * closed after IDLE_SOCKET_MS idle, before a node server would close them.
 * A failure on a reused connection counts as `response` ("maybe presented"),
 * the safe reading. Every request carries its read timeout as
 * X-Request-Deadline-Ms (README "Wire conventions"), and the active trace's
 * `traceparent` (docs/tracing.md). A timer's failure has a `TimeoutError`
 * DOMException as its cause, the size cap's a RangeError.
 */
export class HttpTransport {
  private readonly agent = new http.Agent({
    keepAlive: true,
    timeout: IDLE_SOCKET_MS,
    maxSockets: MAX_SOCKETS,
  });
  private readonly responseBytesMax: number;
  private readonly unavailable: UnavailableErrorFactory;

  constructor(readonly options: TransportOptions) {
    this.responseBytesMax = options.responseBytesMax ?? RESPONSE_BYTES_MAX;
    this.unavailable = options.unavailable ?? peerUnavailable;
    const exchange: Transport = (request) => this.exchange(request);
    const extra = options.headers ? withHeaders(exchange, options.headers) : exchange;
    this.send = options.token ? withBearerToken(extra, options.token) : extra;
  }

  /** The exchange as a plain function, for callers that take a `Transport` seam. */
  readonly send: Transport;

  /** The unavailable error of this peer, for failures the caller finds in an answer. */
  unavailableError(phase: TransportPhase, message: string, cause?: unknown): PeerUnavailableError {
    return this.unavailable(this.options.peer, phase, `${this.options.peer}: ${message}`, cause);
  }

  /** Drops every pooled connection; calls in flight fail in the `response` phase. */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Opens a connection for one later request (`HttpRequest.connection`) and
   * writes nothing, for a caller that must reach the peer before it commits
   * to the call (the rail-proxy's intent, docs/rail.md). Fails in the
   * `connect` phase.
   */
  connect(url: URL, connectTimeoutMs: number): Promise<net.Socket> {
    return new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect({ host: url.hostname, port: Number(url.port || 80) });
      const fail = (message: string, cause: unknown) => {
        clearTimeout(timer);
        socket.destroy();
        reject(this.unavailableError('connect', message, cause));
      };
      const timer = setTimeout(
        () => fail(`no connection within ${connectTimeoutMs} ms`, timeoutCause(connectTimeoutMs)),
        connectTimeoutMs,
      );
      // Once connected, a reset only leaves the socket unwritable (checked before the write).
      socket.on('error', (err) => fail(`connect failed: ${err.message}`, err));
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(socket);
      });
    });
  }

  private exchange(request: HttpRequest): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      const { signal, connection } = request;
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      // Ended or reset by the peer (or destroyed) before a byte was written: never presented.
      if (connection?.writable === false) {
        connection.destroy();
        reject(
          this.unavailableError('connect', 'connection closed before the request was written'),
        );
        return;
      }
      new Exchange(request, this.open(request), {
        responseBytesMax: this.responseBytesMax,
        unavailable: (phase, message, cause) => this.unavailableError(phase, message, cause),
        resolve,
        reject,
      }).start();
    });
  }

  /** The request, on the caller's connection or a pooled one; nothing written yet. */
  private open(request: HttpRequest): http.ClientRequest {
    const { connection } = request;
    const headers = withTraceHeaders({
      ...request.headers,
      ...requestDeadlineHeader(request.readTimeoutMs),
    });
    return http.request(
      request.url,
      connection
        ? {
            method: request.method,
            headers: { ...headers, connection: 'close' },
            createConnection: () => connection,
          }
        : { method: request.method, headers, agent: this.agent },
    );
  }
}

interface ExchangeSettings {
  responseBytesMax: number;
  unavailable: (phase: TransportPhase, message: string, cause?: unknown) => PeerUnavailableError;
  resolve: (response: HttpResponse) => void;
  reject: (err: Error) => void;
}

/**
 * One request in flight: its connect and read timers, its answer, and the one
 * settlement (the first of answer, failure, timeout and abort wins; the rest are ignored).
 */
class Exchange {
  private connected = false;
  private settled = false;
  private connectTimer: NodeJS.Timeout | undefined;
  private readTimer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.finish(abortReason(this.request.signal!));

  constructor(
    private readonly request: HttpRequest,
    private readonly req: http.ClientRequest,
    private readonly settings: ExchangeSettings,
  ) {}

  start(): void {
    const { req, request } = this;
    req.on('socket', (socket) => this.onSocket(socket));
    req.on('error', (err) =>
      this.finish(
        this.settings.unavailable(
          this.connected ? 'response' : 'connect',
          `call failed: ${err.message}`,
          err,
        ),
      ),
    );
    req.on('response', (res) => this.onResponse(res));
    request.signal?.addEventListener('abort', this.onAbort, { once: true });
    req.end(request.body);
  }

  private finish(err: Error | undefined, value?: HttpResponse): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.readTimer);
    this.request.signal?.removeEventListener('abort', this.onAbort);
    this.request.connection?.destroy();
    if (err === undefined) this.settings.resolve(value!);
    else {
      this.req.destroy();
      this.settings.reject(err);
    }
  }

  /** A failure of `phase` when `ms` pass first. */
  private timer(phase: TransportPhase, ms: number, message: string): NodeJS.Timeout {
    return setTimeout(
      () => this.finish(this.settings.unavailable(phase, message, timeoutCause(ms))),
      ms,
    );
  }

  /** The connect timer runs until TCP is up (a reused connection already is). */
  private onSocket(socket: net.Socket): void {
    if (!socket.connecting) {
      this.startRead();
      return;
    }
    const ms = this.request.connectTimeoutMs;
    this.connectTimer = this.timer('connect', ms, `no connection within ${ms} ms`);
    socket.once('connect', () => this.startRead());
  }

  /** The read timer runs from the connection until the last byte of the answer. */
  private startRead(): void {
    this.connected = true;
    clearTimeout(this.connectTimer);
    const ms = this.request.readTimeoutMs;
    this.readTimer = this.timer('response', ms, `no response within ${ms} ms`);
  }

  private onResponse(res: http.IncomingMessage): void {
    const { responseBytesMax, unavailable } = this.settings;
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > responseBytesMax) {
        const message = `answer exceeds ${responseBytesMax} bytes`;
        this.finish(unavailable('response', message, new RangeError(message)));
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () =>
      this.finish(undefined, {
        status: res.statusCode ?? 0,
        text: Buffer.concat(chunks).toString('utf8'),
      }),
    );
    res.on('error', (err) =>
      this.finish(unavailable('response', `answer broken: ${err.message}`, err)),
    );
  }
}

function timeoutCause(ms: number): DOMException {
  return new DOMException(`timed out after ${ms} ms`, 'TimeoutError');
}
