import type { FencingToken, LockGrant } from '@dlock/lock-api';

/** What the lock-server's stores answer and are asked: sessions, grants, holders and listings. */

export interface OpenedSession {
  sessionId: string;
  ownerId: string;
  ttlMillis: number;
  expiresAt: Date;
}

export interface HeartbeatResult {
  sessionId: string;
  expiresAt: Date;
  serverTime: Date;
  heldLockCount: number;
}

export interface AcquireRequest {
  key: string;
  sessionId: string;
  ownerId: string;
  ttlMillis: number;
}

/** Contention is an outcome, not an error: the service decides whether to wait. */
export type AcquireResult =
  | { kind: 'granted'; grant: LockGrant }
  | { kind: 'contended'; holderOwnerId: string; expiresAt: Date };

export interface HeldLock {
  key: string;
  ownerId: string;
  sessionId: string;
  fencingToken: FencingToken;
  acquiredAt: Date;
  expiresAt: Date;
}

export interface RevokeRequest {
  key: string;
  operator: string;
  reason: string;
  expectedToken?: FencingToken;
}

/** One held (live) lock as the console lists it; `leaseRemainingMillis` by the backend's clock. */
export interface ListedLock {
  key: string;
  ownerId: string;
  sessionId: string;
  fencingToken: FencingToken;
  leaseRemainingMillis: number;
}

/** One live session as the console lists it. */
export interface ListedSession {
  sessionId: string;
  ownerId: string;
  ttlMillis: number;
  ttlRemainingMillis: number;
  locksHeld: number;
}

/** What one owner holds now: its live sessions and the live locks on them. */
export interface OwnerLoad {
  sessions: number;
  locks: number;
}

/** A bounded listing: at most the limit asked for; `truncated` when there may be more. */
export interface Listing<T> {
  items: T[];
  truncated: boolean;
}
