import { liveSessionState, type SessionState } from '@dlock/lock-api';
import {
  SessionRegistry,
  type HeartbeatResult,
  type ListedSession,
  type Listing,
  type OpenedSession,
  type OwnerLoad,
} from '../lock-store.port';
import { byteOrder, type MemoryLockState } from './memory-state.model';

/** SessionRegistry in memory: pg's lock_session rules (pg/pg-locks.sql.ts), expiry by `ports.nowMs()`. */
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
    if (s.liveness(sessionId) !== 'live') throw s.gone(sessionId);
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
    // As the port says: a live session becomes CLOSED (its lease ends now), an EXPIRED one
    // stays EXPIRED, a CLOSED or forgotten one is gone.
    const row = s.session(sessionId);
    if (!row || row.closedAtMs !== undefined) throw s.gone(sessionId);
    if (s.liveness(sessionId) === 'live') {
      row.closedAtMs = s.now();
      row.expiresAtMs = row.closedAtMs;
    }
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
        state: liveSessionState(row.ttlMs, row.expiresAtMs - now),
        ttlMillis: row.ttlMs,
        ttlRemainingMillis: Math.floor(row.expiresAtMs - now),
        locksHeld: s.heldBy(row.sessionId),
      })),
      truncated: live.length > limit,
    };
  }

  override async countByState(): Promise<Record<SessionState, number>> {
    await this.state.step();
    const s = this.state;
    const now = s.now();
    const counts: Record<SessionState, number> = { ACTIVE: 0, SUSPECT: 0, EXPIRED: 0, CLOSED: 0 };
    for (const id of [...s.sessions.keys()]) {
      const row = s.session(id);
      if (!row) continue;
      if (row.closedAtMs !== undefined) counts.CLOSED++;
      else if (row.expiresAtMs <= now) counts.EXPIRED++;
      else counts[liveSessionState(row.ttlMs, row.expiresAtMs - now)]++;
    }
    return counts;
  }
}
