import { Inject, Injectable } from '@nestjs/common';
import type net from 'node:net';
import { HttpTransport } from '@dlock/http-client';
import { registerErrorCodes } from '@dlock/lock-api';
import { PAYOUT_ERROR_CODES } from '@dlock/payout-contract';
import {
  boundedWaitMs,
  deadlineWithin,
  refuseShortBudget,
  type RequestDeadline,
} from '@dlock/http-contract';
import { RAIL_DEADLINE_MARGIN_MS, RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import {
  classifyAnswer,
  classifyFailure,
  type RailAnswer,
  type RailTransfer,
} from '../domain/rail-outcome.rules';

export type ConnectResult =
  { ok: true; connection: RailConnection } | { ok: false; reason: string };

/** The rail's answers are a few hundred bytes; past this the answer is not read. */
const RESPONSE_MAX_BYTES = 64 * 1024;

interface ReadBudget {
  limitMs: number;
  minMs: number;
  deadline: RequestDeadline;
}

/**
 * A TCP connection to the rail, opened BEFORE the intent commits and written
 * to at most once AFTER it commits. Until `present` writes, the rail has been
 * shown nothing but a handshake, which is how the proxy proves that a 503
 * RAIL_UNAVAILABLE presented nothing (docs/contract.md).
 */
export class RailConnection {
  private used = false;

  constructor(
    private readonly transport: HttpTransport,
    private readonly socket: net.Socket,
    private readonly submitUrl: URL,
    private readonly read: ReadBudget,
  ) {}

  /** Closes the connection without having written anything. */
  abandon(): void {
    this.used = true;
    this.socket.destroy();
  }

  /** Writes the one request and classifies the answer. Never retries (FR-20). */
  present(transfer: RailTransfer): Promise<RailAnswer> {
    if (this.used) throw new Error('a rail connection is presented at most once');
    this.used = true;
    // The rail read ends before the request's deadline; a read cut shorter
    // than the minimum is not started (the intent is withdrawn, retry-safe).
    // A connection the rail closed meanwhile is withdrawn as closed before the
    // write, whatever the deadline (docs/rail.md): the transport says so.
    const readTimeoutMs = boundedWaitMs(
      this.read.limitMs,
      this.read.deadline,
      RAIL_DEADLINE_MARGIN_MS,
    );
    if (readTimeoutMs < this.read.minMs && this.socket.writable) {
      this.socket.destroy();
      return Promise.resolve({ kind: 'not-presented', reason: 'deadline-too-short' });
    }
    const payload = JSON.stringify(transfer);
    return this.transport
      .send({
        method: 'POST',
        url: this.submitUrl,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(payload)),
        },
        body: payload,
        connectTimeoutMs: 0, // connected already
        readTimeoutMs,
        connection: this.socket,
      })
      .then(({ status, text }) => classifyAnswer(status, text), classifyFailure);
  }
}

/**
 * The proxy is the only component that talks to the rail (docs/rail.md). It uses
 * no pooled connection: each submission's connection is opened before its
 * intent commits and closed after its one answer, since a failure on a
 * reused connection could not prove that nothing was presented (docs/rail.md,
 * "How a 503 proves nothing was presented"; docs/http-client.md).
 */
@Injectable()
export class RailClient {
  private readonly url: URL;
  private readonly submitUrl: URL;
  private readonly transport = new HttpTransport({
    peer: 'rail',
    responseBytesMax: RESPONSE_MAX_BYTES,
  });

  constructor(@Inject(RAIL_PROXY_CONFIG) private readonly config: RailProxyConfig) {
    // Its refusals carry the rail's payout codes: known to whoever builds it, app or test.
    registerErrorCodes(PAYOUT_ERROR_CODES);
    this.url = new URL(config.RAIL_STUB_URL);
    // RAIL_STUB_URL has no trailing slash (libs/config): /submit goes under its path.
    this.submitUrl = new URL('submit', `${config.RAIL_STUB_URL}/`);
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

  /** TCP connect only (1 s budget, docs/contract.md); writes nothing. */
  async connect(deadline: RequestDeadline): Promise<ConnectResult> {
    try {
      const socket = await this.transport.connect(this.url, this.config.RAIL_CONNECT_TIMEOUT_MS);
      const read = {
        limitMs: this.config.RAIL_READ_TIMEOUT_MS,
        minMs: this.config.RAIL_READ_TIMEOUT_MIN_MS,
        deadline,
      };
      return {
        ok: true,
        connection: new RailConnection(this.transport, socket, this.submitUrl, read),
      };
    } catch (err) {
      return { ok: false, reason: connectFailure(err) };
    }
  }
}

/** The cause named in a 503 RAIL_UNAVAILABLE: the socket error's code, else the connect timer. */
function connectFailure(err: unknown): string {
  const cause = (err as Error).cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' ? cause.code : 'connect-timeout';
}
