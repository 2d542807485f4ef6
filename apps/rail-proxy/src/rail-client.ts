import { Inject, Injectable } from '@nestjs/common';
import http from 'node:http';
import net from 'node:net';
import {
  boundedWaitMs,
  deadlineWithin,
  refuseShortBudget,
  requestDeadlineHeader,
  type RequestDeadline,
} from '@dlock/http-contract';
import { withTraceHeaders } from '@dlock/tracing';
import { RAIL_DEADLINE_MARGIN_MS, RAIL_PROXY_CONFIG, type RailProxyConfig } from './config';

/** What the rail is asked to do: no token, no key — it is a third party (C3 §3.6). */
export interface RailTransfer {
  clientRef: string;
  amountMinor: number;
  currency: string;
}

export type AmbiguityReason =
  'read-timeout' | 'connection-reset' | 'rail-5xx' | 'malformed-ack' | 'unexpected-status';

export type RailAnswer =
  | { kind: 'acked'; railReference: string }
  | { kind: 'declined'; status: number }
  | { kind: 'ambiguous'; reason: AmbiguityReason; status?: number }
  /** The connection died before a single request byte was written. */
  | { kind: 'not-presented'; reason: string };

export type ConnectResult =
  { ok: true; connection: RailConnection } | { ok: false; reason: string };

const RESPONSE_MAX_BYTES = 64 * 1024;
const RAIL_REFERENCE = /^[\x21-\x7e]{1,128}$/;

/**
 * A TCP connection to the rail, opened BEFORE the intent commits and written
 * to at most once AFTER it commits. Until `present` writes, the rail has been
 * shown nothing but a handshake, which is how the proxy proves that a 503
 * RAIL_UNAVAILABLE presented nothing (C3 §3.2).
 */
export class RailConnection {
  private used = false;
  private peerClosed = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly url: URL,
    private readonly read: { limitMs: number; minMs: number; deadline: RequestDeadline },
  ) {
    socket.on('end', () => (this.peerClosed = true));
    socket.on('close', () => (this.peerClosed = true));
    socket.on('error', () => (this.peerClosed = true));
  }

  /** Closes the connection without having written anything. */
  abandon(): void {
    this.used = true;
    this.socket.destroy();
  }

  /** Writes the one request and classifies the answer. Never retries (FR-20). */
  present(transfer: RailTransfer): Promise<RailAnswer> {
    if (this.used) throw new Error('a rail connection is presented at most once');
    this.used = true;
    if (this.peerClosed || this.socket.destroyed || !this.socket.writable) {
      this.socket.destroy();
      return Promise.resolve({ kind: 'not-presented', reason: 'connection-closed-before-write' });
    }
    // The rail read ends before the request's deadline; a read cut shorter
    // than the minimum is not started (the intent is withdrawn, retry-safe).
    const readTimeoutMs = boundedWaitMs(
      this.read.limitMs,
      this.read.deadline,
      RAIL_DEADLINE_MARGIN_MS,
    );
    if (readTimeoutMs < this.read.minMs) {
      this.socket.destroy();
      return Promise.resolve({ kind: 'not-presented', reason: 'deadline-too-short' });
    }
    const payload = JSON.stringify(transfer);
    const socket = this.socket;
    return new Promise<RailAnswer>((resolve) => {
      let settled = false;
      let timedOut = false;
      const finish = (answer: RailAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        resolve(answer);
      };
      const req = http.request({
        host: this.url.hostname,
        port: this.url.port,
        path: `${this.url.pathname.replace(/\/+$/, '')}/submit`,
        method: 'POST',
        headers: withTraceHeaders({
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          connection: 'close',
          ...requestDeadlineHeader(readTimeoutMs),
        }),
        createConnection: () => socket,
      });
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('rail read timeout'));
      }, readTimeoutMs);
      req.on('error', () =>
        finish({ kind: 'ambiguous', reason: timedOut ? 'read-timeout' : 'connection-reset' }),
      );
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > RESPONSE_MAX_BYTES) {
            finish({ kind: 'ambiguous', reason: 'malformed-ack', status: res.statusCode });
          } else chunks.push(chunk);
        });
        res.on('error', () =>
          finish({ kind: 'ambiguous', reason: timedOut ? 'read-timeout' : 'connection-reset' }),
        );
        res.on('aborted', () =>
          finish({ kind: 'ambiguous', reason: timedOut ? 'read-timeout' : 'connection-reset' }),
        );
        res.on('end', () =>
          finish(classify(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))),
        );
      });
      req.end(payload);
    });
  }
}

/** Only a well-formed 200 is an ack and only a 402 is a decline; anything else may have paid. */
export function classify(status: number, text: string): RailAnswer {
  if (status === 200) {
    try {
      const body = JSON.parse(text) as { railReference?: unknown; acceptedAt?: unknown };
      if (
        typeof body === 'object' &&
        body !== null &&
        typeof body.railReference === 'string' &&
        RAIL_REFERENCE.test(body.railReference) &&
        typeof body.acceptedAt === 'string'
      ) {
        return { kind: 'acked', railReference: body.railReference };
      }
    } catch {
      // fall through: an unparseable 200 is an ack we cannot read
    }
    return { kind: 'ambiguous', reason: 'malformed-ack', status };
  }
  if (status === 402) return { kind: 'declined', status };
  if (status >= 500) return { kind: 'ambiguous', reason: 'rail-5xx', status };
  return { kind: 'ambiguous', reason: 'unexpected-status', status };
}

/** The proxy is the only component that talks to the rail (C3 §3.5). */
@Injectable()
export class RailClient {
  private readonly url: URL;

  constructor(@Inject(RAIL_PROXY_CONFIG) private readonly config: RailProxyConfig) {
    this.url = new URL(config.RAIL_STUB_URL);
  }

  /**
   * The deadline of one submission: the proxy's own budget, or the caller's
   * if it has less left. Refuses (503 RAIL_UNAVAILABLE, retry-safe) a request
   * that cannot cover a connect and the shortest rail read: call it before
   * the intent is written, since a rail call cut short is RAIL_AMBIGUOUS.
   */
  deadlineFor(caller: RequestDeadline | undefined): RequestDeadline {
    const deadline = deadlineWithin(caller, this.config.RAIL_PROXY_REQUEST_BUDGET_MS);
    const requiredMs =
      RAIL_DEADLINE_MARGIN_MS +
      this.config.RAIL_CONNECT_TIMEOUT_MS +
      this.config.RAIL_READ_TIMEOUT_MIN_MS;
    refuseShortBudget(deadline, requiredMs, 'RAIL_UNAVAILABLE');
    return deadline;
  }

  /** TCP connect only (1 s budget, C3 §3.8); writes nothing. */
  connect(deadline: RequestDeadline): Promise<ConnectResult> {
    const port = Number(this.url.port || 80);
    return new Promise<ConnectResult>((resolve) => {
      const socket = net.connect({ host: this.url.hostname, port });
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({ ok: false, reason: 'connect-timeout' });
      }, this.config.RAIL_CONNECT_TIMEOUT_MS);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve({
          ok: true,
          connection: new RailConnection(socket, this.url, {
            limitMs: this.config.RAIL_READ_TIMEOUT_MS,
            minMs: this.config.RAIL_READ_TIMEOUT_MIN_MS,
            deadline,
          }),
        });
      });
      socket.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        socket.destroy();
        resolve({ ok: false, reason: err.code ?? 'connect-error' });
      });
    });
  }
}
