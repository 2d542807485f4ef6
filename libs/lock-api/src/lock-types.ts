import type { LiveSessionState } from './session-state';
import type { FencingToken } from './fencing-token';

/** Lock keys: `payout:{accountId}` and the like (docs/lock-server.md L4). */
export const LOCK_KEY_PATTERN = /^[a-zA-Z0-9:._-]{1,128}$/;
export const LOCK_KEY_MAX_LENGTH = 128;
export const OWNER_ID_MAX_LENGTH = 64;

export const SESSION_TTL_MIN_MS = 1_000;
export const SESSION_TTL_MAX_MS = 60_000;
export const LOCK_TTL_MIN_MS = 1_000;
export const LOCK_TTL_MAX_MS = 60_000;
export const WAIT_MAX_MS = 30_000;

/** A successful acquire (L4) or renew (L5), as the server grants it. */
export interface LockGrant {
  key: string;
  ownerId: string;
  sessionId: string;
  fencingToken: FencingToken;
  acquiredAt: Date;
  expiresAt: Date;
}

/** L7: advisory only — never a correctness input (FR-07). */
export interface LockInfo {
  key: string;
  held: boolean;
  ownerId?: string;
  fencingToken?: FencingToken;
  acquiredAt?: Date;
  expiresAt?: Date;
  waiterCount: number;
}

/** L8 result: the evicted token and the floor every later grant exceeds. */
export interface LockOutcome {
  revokedToken: FencingToken;
  newTokenFloor: FencingToken;
  revocationId: string;
}

/** Wire shape of L4/L5 (tokens as decimal strings, instants as RFC 3339). */
export interface LockGrantDto {
  key: string;
  ownerId: string;
  sessionId: string;
  fencingToken: string;
  acquiredAt: string;
  expiresAt: string;
  /** The lock-server's signature over the grant (docs/security.md, "Signed grants"). */
  grantProof: string;
}

/** One entry of GET /v1/locks: a held lock, the time left on its lease when read. */
export interface HeldLockDto {
  key: string;
  ownerId: string;
  sessionId: string;
  token: string;
  leaseRemainingMillis: number;
}

/** GET /v1/locks 200: held locks by key; `truncated` when more exist than `limit`. */
export interface LockListDto {
  locks: HeldLockDto[];
  truncated: boolean;
}

/**
 * One entry of GET /v1/sessions. The last heartbeat was
 * `ttlMillis - ttlRemainingMillis` ago (each heartbeat restarts the full TTL).
 */
export interface LiveSessionDto {
  sessionId: string;
  ownerId: string;
  /** ACTIVE, or SUSPECT once a heartbeat is overdue (`liveSessionState`, session-state.ts). */
  state: LiveSessionState;
  ttlMillis: number;
  ttlRemainingMillis: number;
  locksHeld: number;
}

/** GET /v1/sessions 200: live sessions by id; `truncated` when more exist than `limit`. */
export interface SessionListDto {
  sessions: LiveSessionDto[];
  truncated: boolean;
}
