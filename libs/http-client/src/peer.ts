import type { TokenProvider } from '@dlock/identity';
import { errorFromEnvelope } from '@dlock/lock-api';
import { PeerProtocolError, type CallBudget } from './errors';
import { isErrorEnvelope, parsePeerJson, stringifyInt64Json } from './json';
import { HttpTransport, type HeaderProvider } from './transport';

export interface PeerCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** Path and query, already encoded. */
  path: string;
  headers?: Record<string, string>;
  /** Serialised with bigints as decimal strings. */
  body?: unknown;
  budget: CallBudget;
  signal?: AbortSignal;
}

/**
 * A JSON peer service over the shared transport: one request per call, no
 * retries (hop-policy.ts). 2xx → the parsed body (int64-safe); a contract
 * envelope → its typed DlockError; a 5xx without one (a proxy's error page)
 * → unavailable in the `response` phase; anything else → PeerProtocolError.
 */
export class JsonPeer {
  private readonly base: URL;
  private readonly transport: HttpTransport;

  constructor(
    readonly name: string,
    baseUrl: string,
    /** The caller's service token for this peer, and extra headers of every call (docs/security.md). */
    options: { token?: TokenProvider; headers?: HeaderProvider } = {},
  ) {
    this.base = new URL(baseUrl);
    if (this.base.protocol !== 'http:') throw new RangeError(`${name}: only http:// is supported`);
    this.transport = new HttpTransport({
      peer: name,
      token: options.token,
      headers: options.headers,
    });
  }

  async call<T = unknown>(call: PeerCall): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
    let payload: string | undefined;
    if (call.body !== undefined) {
      payload = stringifyInt64Json(call.body);
      headers['content-type'] = 'application/json; charset=utf-8';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const { status, text } = await this.transport.send({
      method: call.method,
      url: new URL(call.path, this.base),
      headers,
      body: payload,
      connectTimeoutMs: call.budget.connectTimeoutMs,
      readTimeoutMs: call.budget.readTimeoutMs,
      signal: call.signal,
    });
    return this.answer(status, text) as T;
  }

  close(): void {
    this.transport.close();
  }

  private answer(status: number, text: string): unknown {
    let body: unknown;
    let unparseable: unknown;
    try {
      body = text === '' ? undefined : parsePeerJson(text);
    } catch (err) {
      unparseable = err;
    }
    const ok = status >= 200 && status < 300;
    if (ok && unparseable === undefined) return body;
    if (!ok && isErrorEnvelope(body)) throw errorFromEnvelope(body, status);
    // Reached, answered nothing usable: the peer may have acted (the safe reading).
    if (status >= 500)
      throw this.transport.unavailableError(
        'response',
        `HTTP ${status} without a contract envelope`,
      );
    throw new PeerProtocolError(
      this.name,
      ok ? `unparseable body (HTTP ${status})` : `HTTP ${status} without a contract envelope`,
      status,
      unparseable,
    );
  }
}
