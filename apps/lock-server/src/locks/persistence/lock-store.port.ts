import type { FencingToken, LockGrant, LockOutcome } from '@dlock/lock-api';
import type {
  OpenedSession,
  HeartbeatResult,
  AcquireRequest,
  AcquireResult,
  HeldLock,
  RevokeRequest,
  ListedLock,
  ListedSession,
  OwnerLoad,
  Listing,
} from '../domain/lock.types';

/**
 * The backend seam (docs/lock-client.md / docs/references.md): the lock-server's web and core
 * layers speak only to these two abstract classes, which double as DI tokens.
 * `store.factory.ts` picks pg or etcd from LOCK_BACKEND. Both backends must
 * give identical observable behaviour (FR-09); the conformance suite proves it.
 *
 * Expected outcomes are typed errors carrying the contract code
 * (SESSION_UNKNOWN, SESSION_EXPIRED, LOCK_LOST, FENCED_OUT, NOT_FOUND,
 * NOT_LEADER). A store never retries: retries live in the client SDK.
 */

export type {
  OpenedSession,
  HeartbeatResult,
  AcquireRequest,
  AcquireResult,
  HeldLock,
  RevokeRequest,
  ListedLock,
  ListedSession,
  OwnerLoad,
  Listing,
};

export abstract class SessionRegistry {
  /** L1 — open a session (docs/lock-server.md#endpoints). */
  abstract open(ownerId: string, ttlMillis: number): Promise<OpenedSession>;
  /** L2. Throws SESSION_UNKNOWN / SESSION_EXPIRED. */
  abstract heartbeat(sessionId: string): Promise<HeartbeatResult>;
  /** L3: ends the session and releases every lock attached to it. */
  abstract close(sessionId: string): Promise<void>;
  /**
   * The identity a session was opened for (live, or expired and still
   * remembered), or null for an id it does not know. A session's owner never
   * changes, so callers may remember the answer (docs/security.md).
   */
  abstract ownerOf(sessionId: string): Promise<string | null>;
  /** The owner's live sessions and their live locks, for the per-owner caps (docs/lock-server.md, "Limits"). */
  abstract loadOf(ownerId: string): Promise<OwnerLoad>;
  /** Advisory: live sessions by sessionId, at most `limit`, with their live lock counts. */
  abstract listLive(limit: number): Promise<Listing<ListedSession>>;
}

export abstract class LockStore {
  /**
   * L4, one attempt. Mints a token strictly above every token ever issued
   * (and above any revocation floor). Same owner + same session on a held
   * key returns the existing grant unchanged.
   */
  abstract acquire(request: AcquireRequest): Promise<AcquireResult>;
  /** L5: extends the lease of the grant (key, token); the token never changes. */
  abstract renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis?: number,
  ): Promise<LockGrant>;
  /**
   * L6: compare-and-delete on (key, token) only. Throws LOCK_LOST when nothing matched.
   * `sessionId` is the session the grant's proof names: a store may read that session in the
   * same step as the delete (etcd does), and never decides the delete by it.
   */
  abstract release(key: string, token: FencingToken, sessionId: string): Promise<void>;
  /** L7 data: the live holder, or null if free; `seen` false when the key never existed. */
  abstract inspect(key: string): Promise<{ seen: boolean; holder: HeldLock | null }>;
  /** L8: frees the key and advances the token floor above the revoked token. */
  abstract revoke(request: RevokeRequest): Promise<LockOutcome>;
  /**
   * Resolves when the key may have become free (released, expired, revoked),
   * or when `signal` aborts. Spurious wake-ups are allowed; the caller re-tries
   * acquire. Used for bounded server-side waits (waitMillis).
   */
  abstract waitForRelease(key: string, signal: AbortSignal): Promise<void>;
  /** Advisory: held (unexpired, live-session) locks by key in byte order, at most `limit`. */
  abstract listHeld(limit: number): Promise<Listing<ListedLock>>;
  /** Readiness: throws when the backend cannot serve a grant. */
  abstract ping(): Promise<void>;
  /**
   * Optional, for the active-sessions / active-grants gauges: live counts as
   * the backend sees them. A backend without it reports no gauge values.
   */
  activity?(): Promise<{ sessions: number; grants: number }>;
}
