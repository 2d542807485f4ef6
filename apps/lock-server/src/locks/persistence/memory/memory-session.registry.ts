import { SessionLostError } from '@dlock/lock-api';
import {
  SessionRegistry,
  type HeartbeatResult,
  type ListedSession,
  type Listing,
  type OpenedSession,
  type OwnerLoad,
} from '../lock-store.port';
import { byteOrder, type MemoryLockState } from './memory-state';

/** SessionRegistry in memory: pg's lock_session rules (pg/sql.ts), expiry by `ports.nowMs()`. */
export class MemorySessionRegistry extends SessionRegistry {
  constructor(private readonly state: MemoryLockState) {
    super();
  }

  override async open(ownerId: string, ttlMillis: number): Promise<OpenedSession> {
    await this.state.step();
    const s = this.state;
    const row = {
      sessionId: s.ports.newId(),
      ownerId,
      ttlMs: ttlMillis,
      expiresAtMs: s.now() + ttlMillis,
    };
    s.sessions.set(row.sessionId, row);
    return {
      sessionId: row.sessionId,
      ownerId,
      ttlMillis,
      expiresAt: new Date(row.expiresAtMs),
    };
  }

  override async heartbeat(sessionId: string): Promise<HeartbeatResult> {
    await this.state.step();
    const s = this.state;
    const liveness = s.liveness(sessionId);
    if (liveness === 'unknown') throw new SessionLostError('SESSION_UNKNOWN', 'no such session');
    if (liveness === 'expired') {
      throw new SessionLostError('SESSION_EXPIRED', 'session expired; its locks were released');
    }
    // An expired session is never revived: only a live one gets its TTL again.
    const row = s.sessions.get(sessionId)!;
    const now = s.now();
    row.expiresAtMs = now + row.ttlMs;
    return {
      sessionId,
      expiresAt: new Date(row.expiresAtMs),
      serverTime: new Date(now),
      heldLockCount: s.heldBy(sessionId),
    };
  }

  override async close(sessionId: string): Promise<void> {
    await this.state.step();
    const s = this.state;
    // As CLOSE_SESSION_SQL: an expired (not yet reaped) session closes too.
    if (s.liveness(sessionId) === 'unknown') {
      throw new SessionLostError('SESSION_UNKNOWN', 'no such session');
    }
    s.sessions.delete(sessionId);
    s.signal.freed(s.freeLocksOf(sessionId));
  }

  override async ownerOf(sessionId: string): Promise<string | null> {
    await this.state.step();
    return this.state.session(sessionId)?.ownerId ?? null;
  }

  override async loadOf(ownerId: string): Promise<OwnerLoad> {
    await this.state.step();
    const s = this.state;
    let sessions = 0;
    let locks = 0;
    for (const row of s.sessions.values()) {
      if (row.ownerId !== ownerId || s.liveness(row.sessionId) !== 'live') continue;
      sessions++;
      locks += s.heldBy(row.sessionId);
    }
    return { sessions, locks };
  }

  override async listLive(limit: number): Promise<Listing<ListedSession>> {
    await this.state.step();
    const s = this.state;
    const now = s.now();
    const live = [...s.sessions.values()]
      .filter((row) => s.liveness(row.sessionId) === 'live')
      .sort((a, b) => byteOrder(a.sessionId, b.sessionId));
    return {
      items: live.slice(0, limit).map((row) => ({
        sessionId: row.sessionId,
        ownerId: row.ownerId,
        ttlMillis: row.ttlMs,
        ttlRemainingMillis: Math.floor(row.expiresAtMs - now),
        locksHeld: s.heldBy(row.sessionId),
      })),
      truncated: live.length > limit,
    };
  }
}
