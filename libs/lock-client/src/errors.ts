import { DlockError } from '@dlock/lock-api';

/**
 * Where a call to the lock-server failed below the contract.
 * - `connect`: no connection was made (refused, unreachable, connect timeout).
 *   Nothing reached the server, so an acquire may be re-sent (C3 §3.8).
 * - `response`: connected, but no complete answer before the read timeout, or
 *   the connection broke. The server may have acted; only calls that are
 *   idempotent by contract (heartbeat) are re-sent after it.
 */
export type TransportPhase = 'connect' | 'response';

/**
 * The lock-server could not be reached or did not answer in time. Carries the
 * project's UNAVAILABLE code so code-based handling still works.
 */
export class LockServerUnavailableError extends DlockError {
  readonly phase: TransportPhase;

  constructor(phase: TransportPhase, message: string, cause?: unknown) {
    super('UNAVAILABLE', message, { details: { phase }, cause });
    this.phase = phase;
  }
}

/** A 2xx body or an error body that does not follow the contract (C3 §3.1/§3.3). */
export class ProtocolError extends DlockError {
  constructor(message: string, httpStatus: number, cause?: unknown) {
    super('INTERNAL', message, { httpStatus, cause });
  }
}
