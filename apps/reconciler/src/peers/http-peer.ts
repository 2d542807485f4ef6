import http from 'node:http';
import { DlockError, errorFromEnvelope, isErrorCode, type ErrorEnvelope } from '@dlock/lock-api';
import { requestDeadlineHeader } from '@dlock/http-contract';

/** Connect and read timeouts of one call (C3 §3.8). */
export interface CallBudget {
  connectTimeoutMs: number;
  readTimeoutMs: number;
}

/** Where a call failed below the contract: `connect` = nothing reached the peer. */
export type PeerPhase = 'connect' | 'response';

/** The peer could not be reached or did not answer in time. */
export class PeerUnavailableError extends DlockError {
  constructor(
    readonly peer: string,
    readonly phase: PeerPhase,
    message: string,
    cause?: unknown,
  ) {
    super('UNAVAILABLE', message, { details: { peer, phase }, cause });
  }
}

export interface PeerRequest {
  method: 'GET' | 'POST';
  /** Path and query, already encoded. */
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  budget: CallBudget;
  signal?: AbortSignal;
}

function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error('aborted');
}

const RESPONSE_BYTES_MAX = 1024 * 1024;

function looksLikeEnvelope(value: unknown): value is ErrorEnvelope {
  const v = value as Partial<ErrorEnvelope> | null;
  return (
    typeof v === 'object' && v !== null && isErrorCode(v.code) && typeof v.message === 'string'
  );
}

/**
 * One HTTP exchange with a peer service, no retries (they live in the
 * callers, per hop). The two timeouts are enforced separately and each call
 * uses a fresh connection, so a failure is either "never connected" or "maybe
 * reached the peer" — the difference decides whether a write may be re-sent.
 * 2xx -> the parsed JSON body; a contract envelope -> its typed DlockError.
 */
export class HttpPeer {
  private readonly agent = new http.Agent({ keepAlive: false });

  constructor(
    readonly name: string,
    private readonly baseUrl: string,
  ) {}

  send(request: PeerRequest): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const { signal, budget } = request;
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      let connected = false;
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      let readTimer: NodeJS.Timeout | undefined;
      const body =
        request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
      const finish = (err: Error | undefined, value?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(readTimer);
        signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve(value);
        else reject(err);
      };
      const fail = (err: Error) => {
        finish(err);
        req.destroy();
      };
      const unavailable = (phase: PeerPhase, message: string, cause?: unknown) =>
        new PeerUnavailableError(this.name, phase, `${this.name}: ${message}`, cause);
      const onAbort = () => fail(abortError(signal));
      const startRead = () => {
        connected = true;
        clearTimeout(connectTimer);
        readTimer = setTimeout(
          () => fail(unavailable('response', `no response within ${budget.readTimeoutMs} ms`)),
          budget.readTimeoutMs,
        );
      };
      // The peer may spend no longer than this call's read timeout (README "Wire conventions").
      const headers: Record<string, string> = {
        accept: 'application/json',
        ...request.headers,
        ...requestDeadlineHeader(budget.readTimeoutMs),
      };
      if (body) {
        headers['content-type'] = 'application/json; charset=utf-8';
        headers['content-length'] = String(body.length);
      }
      const req = http.request(new URL(request.path, this.baseUrl), {
        method: request.method,
        headers,
        agent: this.agent,
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) {
          startRead();
          return;
        }
        connectTimer = setTimeout(
          () => fail(unavailable('connect', `no connection within ${budget.connectTimeoutMs} ms`)),
          budget.connectTimeoutMs,
        );
        socket.once('connect', startRead);
      });
      req.on('error', (err) =>
        fail(unavailable(connected ? 'response' : 'connect', `call failed: ${err.message}`, err)),
      );
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > RESPONSE_BYTES_MAX) {
            fail(unavailable('response', 'response exceeds 1 MiB'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', (err) => fail(unavailable('response', `response broken: ${err.message}`)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          if (status >= 200 && status < 300) {
            if (parsed === undefined && text !== '') {
              finish(new DlockError('INTERNAL', `${this.name}: 2xx body is not JSON`));
            } else finish(undefined, parsed);
          } else if (looksLikeEnvelope(parsed)) {
            finish(errorFromEnvelope(parsed, status));
          } else if (status >= 500) {
            finish(unavailable('response', `HTTP ${status} without a contract envelope`));
          } else {
            finish(new DlockError('INTERNAL', `${this.name}: HTTP ${status} without an envelope`));
          }
        });
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(body);
    });
  }
}

/** C3 §3.8: advisory GETs — 300 ms / 1 s, up to 2 retries on anything transient. */
export const ADVISORY_READ: CallBudget = Object.freeze({
  connectTimeoutMs: 300,
  readTimeoutMs: 1_000,
});
export const ADVISORY_READ_TRIES = 3;

/** C3 §3.8: fenced writes to payment-resource — 500 ms / 3 s. */
export const FENCED_WRITE: CallBudget = Object.freeze({
  connectTimeoutMs: 500,
  readTimeoutMs: 3_000,
});

/** Advisory reads are retried on transport failures and 503; never on a contract answer. */
export async function readWithRetries<T>(
  tries: number,
  fn: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  let last: unknown;
  for (let attempt = 1; attempt <= tries; attempt++) {
    if (signal?.aborted) throw abortError(signal);
    try {
      return await fn();
    } catch (err) {
      last = err;
      const transient =
        err instanceof PeerUnavailableError ||
        (err instanceof DlockError && err.httpStatus === 503);
      if (!transient) throw err;
    }
  }
  throw last;
}

/**
 * Fenced writes: one retry, and only when nothing can have landed (connect
 * failure) or the peer said so itself (503). Never after a 409 or a read
 * timeout (C3 §3.8).
 */
export async function writeWithRetry<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const safe =
      (err instanceof PeerUnavailableError && err.phase === 'connect') ||
      (err instanceof DlockError &&
        !(err instanceof PeerUnavailableError) &&
        err.httpStatus === 503);
    if (!safe) throw err;
    return fn();
  }
}
