import assert from 'node:assert';
import { liveSessionState, sessionGone, type SessionState } from '@dlock/lock-api';
import {
  SessionRegistry,
  type HeartbeatResult,
  type ListedSession,
  type Listing,
  type OpenedSession,
  type OwnerLoad,
} from '../lock-store.port';
import type { PgDatabase } from './pg.gateway';
import type { ReleaseSignal } from './release-signal.model';
import {
  CLOSE_SESSION_SQL,
  HEARTBEAT_SQL,
  LIST_SESSIONS_SQL,
  OPEN_SESSION_SQL,
  OWNER_LOAD_SQL,
  SESSION_OWNER_SQL,
  SESSION_STATE_SQL,
  SESSIONS_BY_STATE_SQL,
} from './pg-locks.sql';

/** SessionRegistry on PostgreSQL: lock_session rows, expiry by the database clock. */
export class PgSessionRegistry extends SessionRegistry {
  constructor(
    private readonly db: PgDatabase,
    private readonly signal: ReleaseSignal,
  ) {
    super();
  }

  async open(ownerId: string, ttlMillis: number): Promise<OpenedSession> {
    const [row] = await this.db.rows<{
      session_id: string;
      owner_id: string;
      ttl_ms: number;
      expires_at: Date;
    }>(OPEN_SESSION_SQL, [ownerId, ttlMillis]);
    assert(row, 'session insert returned no row');
    return {
      sessionId: row.session_id,
      ownerId: row.owner_id,
      ttlMillis: row.ttl_ms,
      expiresAt: row.expires_at,
    };
  }

  async heartbeat(sessionId: string): Promise<HeartbeatResult> {
    const [row] = await this.db.rows<{
      session_id: string;
      expires_at: Date;
      server_time: Date;
      held_lock_count: number;
    }>(HEARTBEAT_SQL, [sessionId]);
    if (row) {
      return {
        sessionId: row.session_id,
        expiresAt: row.expires_at,
        serverTime: row.server_time,
        heldLockCount: row.held_lock_count,
      };
    }
    const [state] = await this.db.rows<{ alive: boolean; closed: boolean }>(SESSION_STATE_SQL, [
      sessionId,
    ]);
    throw sessionGone(!state ? 'UNKNOWN' : state.closed ? 'CLOSED' : 'EXPIRED');
  }

  async close(sessionId: string): Promise<void> {
    const [row] = await this.db.rows<{ found: number; was_closed: boolean; freed_keys: string[] }>(
      CLOSE_SESSION_SQL,
      [sessionId],
    );
    if (!row || row.found === 0) throw sessionGone('UNKNOWN');
    if (row.was_closed) throw sessionGone('CLOSED');
    this.signal.freed(row.freed_keys);
  }

  override async countByState(): Promise<Record<SessionState, number>> {
    const [row] = await this.db.rows<{
      active: number;
      suspect: number;
      expired: number;
      closed: number;
    }>(SESSIONS_BY_STATE_SQL);
    assert(row, 'session count returned no row');
    return { ACTIVE: row.active, SUSPECT: row.suspect, EXPIRED: row.expired, CLOSED: row.closed };
  }

  async ownerOf(sessionId: string): Promise<string | null> {
    const [row] = await this.db.rows<{ owner_id: string }>(SESSION_OWNER_SQL, [sessionId]);
    return row?.owner_id ?? null;
  }

  async loadOf(ownerId: string): Promise<OwnerLoad> {
    const [row] = await this.db.rows<OwnerLoad>(OWNER_LOAD_SQL, [ownerId]);
    return row ?? { sessions: 0, locks: 0 };
  }

  async listLive(limit: number): Promise<Listing<ListedSession>> {
    const rows = await this.db.rows<{
      session_id: string;
      owner_id: string;
      ttl_ms: number;
      ttl_remaining_ms: number;
      locks_held: number;
    }>(LIST_SESSIONS_SQL, [limit + 1]);
    return {
      items: rows.slice(0, limit).map((r) => ({
        sessionId: r.session_id,
        ownerId: r.owner_id,
        state: liveSessionState(r.ttl_ms, r.ttl_remaining_ms),
        ttlMillis: r.ttl_ms,
        ttlRemainingMillis: r.ttl_remaining_ms,
        locksHeld: r.locks_held,
      })),
      truncated: rows.length > limit,
    };
  }
}
