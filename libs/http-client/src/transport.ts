import http from 'node:http';
import { requestDeadlineHeader } from '@dlock/lock-api';
import { withTraceHeaders } from '@dlock/tracing';
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
 * `traceparent` (docs/tracing.md).
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
  }

  /** The exchange as a plain function, for callers that take a `Transport` seam. */
  readonly send: Transport = (request) => this.exchange(request);

  /** The unavailable error of this peer, for failures the caller finds in an answer. */
  unavailableError(phase: TransportPhase, message: string, cause?: unknown): PeerUnavailableError {
    return this.unavailable(this.options.peer, phase, `${this.options.peer}: ${message}`, cause);
  }

  /** Drops every pooled connection; calls in flight fail in the `response` phase. */
  close(): void {
    this.agent.destroy();
  }

  private exchange(request: HttpRequest): Promise<HttpResponse> {
    return new Promise<HttpResponse>((resolve, reject) => {
      const { signal } = request;
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const unavailable = (phase: TransportPhase, message: string, cause?: unknown) =>
        this.unavailableError(phase, message, cause);
      let connected = false;
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      let readTimer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, value?: HttpResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(readTimer);
        signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve(value!);
        else {
          req.destroy();
          reject(err);
        }
      };
      const onAbort = () => finish(abortReason(signal!));
      const startRead = () => {
        connected = true;
        clearTimeout(connectTimer);
        readTimer = setTimeout(
          () => finish(unavailable('response', `no response within ${request.readTimeoutMs} ms`)),
          request.readTimeoutMs,
        );
      };
      const req = http.request(request.url, {
        method: request.method,
        headers: withTraceHeaders({
          ...request.headers,
          ...requestDeadlineHeader(request.readTimeoutMs),
        }),
        agent: this.agent,
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) {
          startRead();
          return;
        }
        connectTimer = setTimeout(
          () =>
            finish(unavailable('connect', `no connection within ${request.connectTimeoutMs} ms`)),
          request.connectTimeoutMs,
        );
        socket.once('connect', startRead);
      });
      req.on('error', (err) =>
        finish(unavailable(connected ? 'response' : 'connect', `call failed: ${err.message}`, err)),
      );
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.responseBytesMax) {
            finish(unavailable('response', `answer exceeds ${this.responseBytesMax} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          finish(undefined, {
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', (err) =>
          finish(unavailable('response', `answer broken: ${err.message}`, err)),
        );
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(request.body);
    });
  }
}
