import assert from 'node:assert/strict';
import {
  DlockError,
  FencedOutError,
  LockLostError,
  formatFencingToken,
  type FencingToken,
  type LockGrant,
  type LockOutcome,
} from '@dlock/lock-api';
import {
  LockStore,
  type AcquireRequest,
  type AcquireResult,
  type HeldLock,
  type ListedLock,
  type Listing,
  type RevokeRequest,
} from '../lock-store.port';
import { byteOrder, type LockRow, type MemoryLockState } from './memory-state.model';

function toGrant(row: LockRow): LockGrant {
  assert.ok(row.sessionId !== null, 'a grant has a session');
  return {
    key: row.key,
    ownerId: row.ownerId,
    sessionId: row.sessionId,
    fencingToken: row.token,
    acquiredAt: new Date(row.acquiredAtMs),
    expiresAt: new Date(row.expiresAtMs),
  };
}

/**
 * LockStore in memory, statement for statement the pg backend's rules
 * (pg/pg-locks.sql.ts): each operation is one synchronous step on MemoryLockState,
 * so it is atomic the way one SQL statement is. Held to the same
 * conformance suite as pg and etcd (apps/lock-server/test/conformance).
 */
export class MemoryLockStore extends LockStore {
  constructor(private readonly state: MemoryLockState) {
    super();
  }

  override async acquire(request: AcquireRequest): Promise<AcquireResult> {
    await this.state.step();
    const s = this.state;
    const liveness = s.liveness(request.sessionId);
    if (liveness !== 'live') throw s.gone(request.sessionId);
    const now = s.now();
    const row = s.locks.get(request.key);
    if (row && this.isSameLiveHolder(row, request)) return { kind: 'granted', grant: toGrant(row) };
    if (row && s.isLive(row)) {
      return {
        kind: 'contended',
        holderOwnerId: row.ownerId,
        expiresAt: new Date(row.expiresAtMs),
      };
    }
    // Free, expired, or its holder's session is dead: a new token, minted under the "row lock".
    const granted: LockRow = {
      key: request.key,
      sessionId: request.sessionId,
      ownerId: request.ownerId,
      token: s.nextToken(),
      ttlMs: request.ttlMillis,
      acquiredAtMs: now,
      expiresAtMs: now + request.ttlMillis,
    };
    s.locks.set(request.key, granted);
    return { kind: 'granted', grant: toGrant(granted) };
  }

  /** SAME_LIVE_HOLDER of pg-locks.sql.ts: same session and owner, lease unexpired. */
  private isSameLiveHolder(row: LockRow, request: AcquireRequest): boolean {
    return (
      row.sessionId === request.sessionId &&
      row.ownerId === request.ownerId &&
      row.expiresAtMs > this.state.now()
    );
  }

  override async renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis?: number,
  ): Promise<LockGrant> {
    await this.state.step();
    // The lease restarts with the TTL it was granted, as pg and etcd do (FR-09).
    void ttlMillis;
    const s = this.state;
    const row = s.locks.get(key);
    if (row && row.token === token && row.sessionId === sessionId && s.isLive(row)) {
      row.expiresAtMs = s.now() + row.ttlMs;
      return toGrant(row);
    }
    const liveness = s.liveness(sessionId);
    if (liveness !== 'live') throw s.gone(sessionId);
    throw new LockLostError('the grant has expired, was released, revoked or taken over', {
      details: { storedToken: row ? formatFencingToken(row.token) : null },
    });
  }

  override async release(key: string, token: FencingToken): Promise<void> {
    await this.state.step();
    const s = this.state;
    const row = s.locks.get(key);
    if (!row || row.token !== token || !s.isLive(row)) {
      throw new LockLostError('the grant had already expired or was taken over');
    }
    row.sessionId = null;
    row.expiresAtMs = s.now();
    s.signal.freed([key]);
  }

  override async inspect(key: string): Promise<{ seen: boolean; holder: HeldLock | null }> {
    await this.state.step();
    const row = this.state.locks.get(key);
    if (!row) return { seen: false, holder: null };
    return { seen: true, holder: this.state.isLive(row) ? toGrant(row) : null };
  }

  override async revoke(request: RevokeRequest): Promise<LockOutcome> {
    await this.state.step();
    const s = this.state;
    const row = s.locks.get(request.key);
    const live = row !== undefined && s.isLive(row);
    if (live && (request.expectedToken === undefined || row.token === request.expectedToken)) {
      row.sessionId = null;
      row.expiresAtMs = s.now();
      const outcome: LockOutcome = {
        revokedToken: row.token,
        newTokenFloor: s.nextToken(),
        revocationId: s.ports.newId(),
      };
      assert.ok(outcome.newTokenFloor > outcome.revokedToken, 'floor must exceed revoked token');
      s.revocations.push({
        revocationId: outcome.revocationId,
        key: request.key,
        revokedToken: outcome.revokedToken,
        newTokenFloor: outcome.newTokenFloor,
        operator: request.operator,
        reason: request.reason,
        revokedAt: new Date(s.now()),
      });
      s.signal.freed([request.key]);
      return outcome;
    }
    if (live && request.expectedToken !== undefined) {
      throw new FencedOutError('expectedToken is not the live grant of this key', {
        details: {
          presentedToken: formatFencingToken(request.expectedToken),
          highestToken: formatFencingToken(row.token),
        },
      });
    }
    throw new DlockError('NOT_FOUND', 'the key is not held');
  }

  override waitForRelease(key: string, signal: AbortSignal): Promise<void> {
    return this.state.signal.next(key, signal);
  }

  override async listHeld(limit: number): Promise<Listing<ListedLock>> {
    await this.state.step();
    const s = this.state;
    const live = [...s.locks.values()]
      .filter((row) => s.isLive(row))
      .sort((a, b) => byteOrder(a.key, b.key));
    return {
      items: live.slice(0, limit).map((row) => ({
        key: row.key,
        ownerId: row.ownerId,
        sessionId: row.sessionId!,
        fencingToken: row.token,
        leaseRemainingMillis: Math.floor(row.expiresAtMs - s.now()),
      })),
      truncated: live.length > limit,
    };
  }

  override async ping(): Promise<void> {
    await this.state.step();
  }

  override async activity(): Promise<{ sessions: number; grants: number }> {
    await this.state.step();
    const s = this.state;
    let sessions = 0;
    for (const id of s.sessions.keys()) if (s.liveness(id) === 'live') sessions++;
    let grants = 0;
    for (const row of s.locks.values()) if (s.isLive(row)) grants++;
    return { sessions, grants };
  }
}
