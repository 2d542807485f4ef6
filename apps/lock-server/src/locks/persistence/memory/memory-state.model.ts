import { randomUUID } from 'node:crypto';
import { sessionGone, type FencingToken, type SessionLostError } from '@dlock/lock-api';
import { ReleaseSignal } from '../pg/release-signal.model';
import type { RevocationEntry } from '../revocation-log.port';
import type { RevocationRequest } from '../revocation-requests.port';

/** Where the memory backend reads time and mints ids: the real clock, or a simulator's. */
export interface MemoryBackendPorts {
  /** Wall-clock milliseconds since the epoch (the backend's `clock_timestamp()`). */
  nowMs(): number;
  /** A fresh UUID (session, revocation and request ids). */
  newId(): string;
  /**
   * Awaited before each operation's one synchronous step: a round trip to
   * the "database". The simulation makes it take virtual time, so concurrent
   * requests interleave inside the service layer as they do on pg.
   */
  step?(): Promise<void>;
}

export const REAL_MEMORY_PORTS: MemoryBackendPorts = {
  nowMs: () => Date.now(),
  newId: () => randomUUID(),
};

export interface SessionRow {
  sessionId: string;
  ownerId: string;
  ttlMs: number;
  expiresAtMs: number;
  /** L3's instant: the lease ends then too (pg's closed_at, docs/lock-server.md "Session states"). */
  closedAtMs?: number;
}

/** A key's row; `sessionId` null = released or revoked (the key stays "seen", as in pg). */
export interface LockRow {
  key: string;
  sessionId: string | null;
  ownerId: string;
  token: FencingToken;
  ttlMs: number;
  acquiredAtMs: number;
  expiresAtMs: number;
}

/**
 * What the session registry answers about a session id now. Kept as one
 * function so a richer lifecycle (ACTIVE/SUSPECT/EXPIRED/CLOSED) changes here only.
 */
export type SessionLiveness = 'live' | 'expired' | 'unknown';

/**
 * The whole memory backend: the pg backend's tables as maps, with the same
 * rules (pg-locks.sql.ts) decided by one synchronous step each, so no two operations
 * interleave. Time comes from `ports.nowMs()` only: the deterministic
 * simulation (apps/harness/src/sim) supplies its virtual clock here.
 */
export class MemoryLockState {
  readonly sessions = new Map<string, SessionRow>();
  readonly locks = new Map<string, LockRow>();
  readonly revocations: RevocationEntry[] = [];
  readonly requests = new Map<string, RevocationRequest & { approvedBy: string | null }>();
  /** Wakes waiting acquires of this process (the same in-process signal pg uses). */
  readonly signal = new ReleaseSignal();
  /** The last token minted (`fencing_token_seq`); only ever grows. */
  private tokenSeq = 0n;

  constructor(
    readonly ports: MemoryBackendPorts,
    /** LOCK_SESSION_RETENTION_MS: an expired session answers SESSION_EXPIRED this long. */
    readonly sessionRetentionMs: number,
  ) {}

  step(): Promise<void> {
    return this.ports.step ? this.ports.step() : Promise.resolve();
  }

  now(): number {
    return this.ports.nowMs();
  }

  nextToken(): FencingToken {
    this.tokenSeq += 1n;
    return this.tokenSeq;
  }

  /** The session's row unless reaped (expired longer ago than the retention). */
  session(sessionId: string): SessionRow | undefined {
    const row = this.sessions.get(sessionId);
    if (row && row.expiresAtMs < this.now() - this.sessionRetentionMs) {
      this.sessions.delete(sessionId);
      return undefined;
    }
    return row;
  }

  liveness(sessionId: string): SessionLiveness {
    const row = this.session(sessionId);
    if (!row) return 'unknown';
    return row.expiresAtMs > this.now() ? 'live' : 'expired';
  }

  /** The error for a session that is not live: CLOSED, EXPIRED, or forgotten (lock-api's sessionGone). */
  gone(sessionId: string): SessionLostError {
    const row = this.session(sessionId);
    if (!row) return sessionGone('UNKNOWN');
    return sessionGone(row.closedAtMs === undefined ? 'EXPIRED' : 'CLOSED');
  }

  /** A live grant: held by a session, lease unexpired, that session live (pg-locks.sql.ts "Live" grant). */
  isLive(row: LockRow): boolean {
    return (
      row.sessionId !== null &&
      row.expiresAtMs > this.now() &&
      this.liveness(row.sessionId) === 'live'
    );
  }

  /** Frees every key `sessionId` holds (close); answers the keys freed. */
  freeLocksOf(sessionId: string): string[] {
    const freed: string[] = [];
    for (const row of this.locks.values()) {
      if (row.sessionId !== sessionId) continue;
      row.sessionId = null;
      row.expiresAtMs = this.now();
      freed.push(row.key);
    }
    return freed;
  }

  /** Live grants of `sessionId` (its lease unexpired), as HEARTBEAT_SQL counts them. */
  heldBy(sessionId: string): number {
    let n = 0;
    for (const row of this.locks.values())
      if (row.sessionId === sessionId && row.expiresAtMs > this.now()) n++;
    return n;
  }
}

/** Byte order of ASCII keys and ids, as pg's COLLATE "C" and uuid ordering sort them. */
export function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
