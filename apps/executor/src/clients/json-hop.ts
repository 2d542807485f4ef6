import http from 'node:http';
import { DlockError, errorFromEnvelope, isErrorCode, type ErrorEnvelope } from '@dlock/lock-api';
import { int64Replacer, parsePeerJson, requestDeadlineHeader } from '@dlock/http-contract';

/** Below node:http's server keepAliveTimeout (5 s): this side closes an idle connection first. */
const IDLE_SOCKET_MS = 4_000;

/** Connect and read timeouts of one call (C3 §3.8). */
export interface HopBudget {
  connectTimeoutMs: number;
  readTimeoutMs: number;
}

/**
 * Where a call failed below the contract. `connect`: no connection was made,
 * so nothing reached the peer. `response`: connected, then no complete answer
 * in time or the connection broke: the peer may have acted.
 */
export type HopPhase = 'connect' | 'response';

/** The peer could not be reached or did not answer in time (code UNAVAILABLE). */
export class HopUnavailableError extends DlockError {
  readonly phase: HopPhase;
  constructor(hop: string, phase: HopPhase, message: string, cause?: unknown) {
    super('UNAVAILABLE', `${hop}: ${message}`, { details: { hop, phase }, cause });
    this.phase = phase;
  }
}

/** A body that breaks the wire contract (no envelope on an error, unparseable 2xx). */
export class HopProtocolError extends DlockError {
  constructor(hop: string, message: string, httpStatus: number) {
    super('INTERNAL', `${hop}: ${message}`, { httpStatus, details: { hop } });
  }
}

export interface HopRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  budget: HopBudget;
}

const RESPONSE_BYTES_MAX = 1024 * 1024;

function isEnvelope(value: unknown): value is ErrorEnvelope {
  return (
    typeof value === 'object' &&
    value !== null &&
    isErrorCode((value as { code?: unknown }).code) &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

/**
 * One JSON hop to a peer over node:http, no retries (retries live in the
 * typed clients, one named budget each). The two timeouts are separate: the
 * connect timer runs until TCP is up, the read timer from then to the last
 * byte. Bodies are parsed without losing int64 digits; a non-2xx becomes the
 * typed error of its envelope (`errorFromEnvelope`).
 */
export class JsonHop {
  private readonly agent: http.Agent;
  private readonly base: URL;

  /**
   * Connections are kept alive and dropped after IDLE_SOCKET_MS idle, before
   * the peer's server would close them. A failure on a reused connection is a
   * read-phase failure ("may have reached the peer"), which every caller
   * already treats safely: the submit leaves the payout RAIL_SUBMITTED for
   * recovery from the proxy's record.
   */
  constructor(
    readonly name: string,
    baseUrl: string,
  ) {
    this.base = new URL(baseUrl);
    if (this.base.protocol !== 'http:') throw new RangeError(`${name}: only http:// is supported`);
    this.agent = new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, maxSockets: 64 });
  }

  /** Sends the request; resolves to the parsed 2xx body, rejects with a typed error otherwise. */
  async call<T>(req: HopRequest): Promise<T> {
    const { status, text } = await this.exchange(req);
    let body: unknown;
    try {
      body = text === '' ? undefined : parsePeerJson(text);
    } catch {
      throw new HopProtocolError(this.name, `unparseable body (HTTP ${status})`, status);
    }
    if (status >= 200 && status < 300) return body as T;
    if (isEnvelope(body)) throw errorFromEnvelope(body, status);
    throw new HopProtocolError(this.name, `HTTP ${status} without a contract envelope`, status);
  }

  close(): void {
    this.agent.destroy();
  }

  private exchange(req: HopRequest): Promise<{ status: number; text: string }> {
    const url = new URL(req.path, this.base);
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body, int64Replacer);
    // The peer may spend no longer than this call's read timeout (README "Wire conventions").
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...req.headers,
      ...requestDeadlineHeader(req.budget.readTimeoutMs),
    };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json; charset=utf-8';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      let connected = false;
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      let readTimer: NodeJS.Timeout | undefined;
      const finish = (err: Error | undefined, value?: { status: number; text: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(readTimer);
        if (err) {
          outgoing.destroy();
          reject(err);
        } else resolve(value!);
      };
      const startRead = () => {
        connected = true;
        clearTimeout(connectTimer);
        readTimer = setTimeout(
          () =>
            finish(
              new HopUnavailableError(
                this.name,
                'response',
                `no response within ${req.budget.readTimeoutMs} ms`,
              ),
            ),
          req.budget.readTimeoutMs,
        );
      };
      const outgoing = http.request(url, { method: req.method, headers, agent: this.agent });
      outgoing.on('socket', (socket) => {
        if (!socket.connecting) {
          startRead();
          return;
        }
        connectTimer = setTimeout(
          () =>
            finish(
              new HopUnavailableError(
                this.name,
                'connect',
                `no connection within ${req.budget.connectTimeoutMs} ms`,
              ),
            ),
          req.budget.connectTimeoutMs,
        );
        socket.once('connect', startRead);
      });
      outgoing.on('error', (err) =>
        finish(
          new HopUnavailableError(
            this.name,
            connected ? 'response' : 'connect',
            `call failed: ${err.message}`,
            err,
          ),
        ),
      );
      outgoing.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > RESPONSE_BYTES_MAX) {
            finish(new HopProtocolError(this.name, 'response body too large', res.statusCode ?? 0));
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
          finish(
            new HopUnavailableError(this.name, 'response', `response broken: ${err.message}`, err),
          ),
        );
      });
      outgoing.end(payload);
    });
  }
}
