import { DlockError } from '@dlock/lock-api';

/** Connect and read timeouts of one call (docs/contract.md): separate budgets, both required. */
export interface CallBudget {
  connectTimeoutMs: number;
  readTimeoutMs: number;
}

/**
 * Where a call failed below the contract.
 * - `connect`: no connection was made (refused, unreachable, connect timeout),
 *   or a connection from `HttpTransport.connect` closed before the write, so
 *   the request was never presented: nothing happened at the peer.
 * - `response`: connected (or on a reused connection), then no complete answer
 *   in time, a broken connection, an oversized or non-contract 5xx answer. The
 *   peer may have acted; only calls idempotent by contract may be re-sent.
 */
export type TransportPhase = 'connect' | 'response';

/** The peer could not be reached or did not answer in time (code UNAVAILABLE). */
export class PeerUnavailableError extends DlockError {
  constructor(
    readonly peer: string,
    readonly phase: TransportPhase,
    message: string,
    cause?: unknown,
  ) {
    super('UNAVAILABLE', message, { details: { peer, phase }, cause });
  }

  /** True when the request cannot have been presented to the peer. */
  get neverPresented(): boolean {
    return this.phase === 'connect';
  }
}

/** An answer that breaks the wire contract: no envelope on a 4xx, an unparseable 2xx. */
export class PeerProtocolError extends DlockError {
  constructor(
    readonly peer: string,
    message: string,
    httpStatus: number,
    cause?: unknown,
  ) {
    super('INTERNAL', `${peer}: ${message}`, { httpStatus, details: { peer }, cause });
  }
}

/** Builds the unavailable error a caller's users expect (the SDK keeps its own public class). */
export type UnavailableErrorFactory = (
  peer: string,
  phase: TransportPhase,
  message: string,
  cause?: unknown,
) => PeerUnavailableError;

export const peerUnavailable: UnavailableErrorFactory = (peer, phase, message, cause) =>
  new PeerUnavailableError(peer, phase, message, cause);

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const message = typeof reason === 'string' ? reason : 'The operation was aborted';
  return new DOMException(message, 'AbortError');
}
