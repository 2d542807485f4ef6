import http from 'node:http';
import { requestDeadlineHeader } from '@dlock/lock-api';
import { abortReason } from './clock';
import { LockServerUnavailableError } from './errors';

export interface WireRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: URL;
  headers: Record<string, string>;
  /** Already-serialised JSON. */
  body?: string;
  connectTimeoutMs: number;
  readTimeoutMs: number;
  signal?: AbortSignal;
}

export interface WireResponse {
  status: number;
  /** Raw body text; parsed by the caller so int64 fields can be handled as strings. */
  text: string;
}

/** One HTTP exchange, no retries (retries live in retry-policy.ts and the heartbeat round). */
export type Transport = (request: WireRequest) => Promise<WireResponse>;

const RESPONSE_BYTES_MAX = 64 * 1024;
/** Below node:http's server keepAliveTimeout (5 s): the client closes an idle connection first. */
export const IDLE_SOCKET_MS = 4_000;

/**
 * node:http with the two timeouts of C3 §3.8 enforced separately: the connect
 * timer runs until the TCP connection is up, the read timer from then until
 * the whole response has arrived. Connections are kept alive (a connection
 * per call cost the lock-server a third of its CPU per grant). A failure on a
 * reused connection counts as "maybe reached the server" (phase `response`,
 * never retried), which is the safe reading; the client drops an idle
 * connection before Node's server would (IDLE_SOCKET_MS), so a call does not
 * meet a connection the server is closing.
 */
export function nodeHttpTransport(): Transport {
  const agent = new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  return (request) =>
    new Promise<WireResponse>((resolve, reject) => {
      const { signal } = request;
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      let connected = false;
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      let readTimer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, value?: WireResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(readTimer);
        signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve(value!);
        else reject(err);
      };
      const fail = (err: Error) => {
        finish(err);
        req.destroy();
      };
      const onAbort = () => fail(abortReason(signal!));
      const startRead = () => {
        connected = true;
        clearTimeout(connectTimer);
        readTimer = setTimeout(
          () =>
            fail(
              new LockServerUnavailableError(
                'response',
                `no response from lock-server within ${request.readTimeoutMs} ms`,
              ),
            ),
          request.readTimeoutMs,
        );
      };

      const req = http.request(request.url, {
        method: request.method,
        // The server may spend no longer than this call's read timeout (README "Wire conventions").
        headers: { ...request.headers, ...requestDeadlineHeader(request.readTimeoutMs) },
        agent,
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) {
          startRead();
          return;
        }
        connectTimer = setTimeout(
          () =>
            fail(
              new LockServerUnavailableError(
                'connect',
                `could not connect to lock-server within ${request.connectTimeoutMs} ms`,
              ),
            ),
          request.connectTimeoutMs,
        );
        socket.once('connect', startRead);
      });
      req.on('error', (err) => {
        fail(
          new LockServerUnavailableError(
            connected ? 'response' : 'connect',
            `lock-server call failed: ${err.message}`,
            err,
          ),
        );
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > RESPONSE_BYTES_MAX) {
            fail(new LockServerUnavailableError('response', 'lock-server response exceeds 64 KiB'));
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
          fail(new LockServerUnavailableError('response', `response broken: ${err.message}`, err)),
        );
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(request.body);
    });
}
