import { DlockError } from '@dlock/lock-api';
import { PeerUnavailableError, type TransportPhase } from '@dlock/http-client';

/**
 * Where a call to the lock-server failed below the contract.
 * - `connect`: no connection was made (refused, unreachable, connect timeout).
 *   Nothing reached the server, so an acquire may be re-sent (docs/contract.md).
 * - `response`: connected, but no complete answer before the read timeout, or
 *   the connection broke. The server may have acted; only calls that are
 *   idempotent by contract (heartbeat) are re-sent after it.
 */
export type { TransportPhase };

/**
 * The lock-server could not be reached or did not answer in time. Carries the
 * project's UNAVAILABLE code so code-based handling still works; it is the
 * shared layer's PeerUnavailableError for the peer `lock-server`.
 */
export class LockServerUnavailableError extends PeerUnavailableError {
  constructor(phase: TransportPhase, message: string, cause?: unknown) {
    super('lock-server', phase, message, cause);
  }
}

/** A 2xx body or an error body that does not follow the contract (docs/contract.md/§3.3). */
export class ProtocolError extends DlockError {
  constructor(message: string, httpStatus: number, cause?: unknown) {
    super('INTERNAL', message, { httpStatus, cause });
  }
}
