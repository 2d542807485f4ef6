import { SessionLostError } from './errors';

/**
 * The server-side session states of docs/lock-server.md, "Session states". A live session is
 * ACTIVE or SUSPECT; an ended one EXPIRED (its heartbeat lapsed) or CLOSED (L3), and it is
 * remembered in that state for LOCK_SESSION_RETENTION_MS before it reads as unknown.
 */
export const SESSION_STATES = ['ACTIVE', 'SUSPECT', 'EXPIRED', 'CLOSED'] as const;
export type SessionState = (typeof SESSION_STATES)[number];
export type LiveSessionState = Extract<SessionState, 'ACTIVE' | 'SUSPECT'>;
export type EndedSessionState = Extract<SessionState, 'EXPIRED' | 'CLOSED'>;

/**
 * SUSPECT is derived, never written: a session is SUSPECT once more than half its TTL has
 * passed since its last heartbeat (each heartbeat restarts the full TTL). The SDK beats every
 * ttl/3 and a first try answers within 1 s, so a healthy client stays ACTIVE; a missed beat
 * shows before the lease lapses (docs/lock-server.md, "Session states").
 */
export function liveSessionState(ttlMillis: number, ttlRemainingMillis: number): LiveSessionState {
  return ttlRemainingMillis * 2 < ttlMillis ? 'SUSPECT' : 'ACTIVE';
}

/**
 * The error for a session that has ended: 410 SESSION_EXPIRED for both ended states, the
 * state in `details.state`; 404 SESSION_UNKNOWN once it is forgotten (docs/contract.md).
 */
export function sessionGone(state: EndedSessionState | 'UNKNOWN'): SessionLostError {
  switch (state) {
    case 'UNKNOWN':
      return new SessionLostError('SESSION_UNKNOWN', 'no such session');
    case 'EXPIRED':
      return new SessionLostError('SESSION_EXPIRED', 'session expired; its locks were released', {
        details: { state },
      });
    case 'CLOSED':
      return new SessionLostError('SESSION_EXPIRED', 'session closed; its locks were released', {
        details: { state },
      });
    default:
      throw new Error(`unknown session state ${String(state)}`);
  }
}
