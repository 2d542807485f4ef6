import assert from 'node:assert';
import {
  DlockError,
  FencedOutError,
  LockLostError,
  sessionGone,
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
import type { PgDatabase } from './pg.gateway';
import type { ReleaseSignal } from './release-signal.model';
import { tokenFromDb, type GrantRow } from './pg-rows.codec';
import {
  ACQUIRE_SQL,
  ACTIVITY_SQL,
  GRANT_DIAGNOSIS_SQL,
  INSPECT_SQL,
  LIST_HELD_SQL,
  RELEASE_SQL,
  RENEW_SQL,
  REVOKE_SQL,
} from './pg-locks.sql';

type AcquireRow = Partial<GrantRow> & {
  outcome: 'granted' | 'session_unknown' | 'session_expired' | 'session_closed' | 'contended';
  db_now: Date;
};

function toGrant(key: string, row: GrantRow): LockGrant {
  return {
    key,
    ownerId: row.owner_id,
    sessionId: row.session_id,
    fencingToken: tokenFromDb(row.fencing_token),
    acquiredAt: row.acquired_at,
    expiresAt: row.expires_at,
  };
}

/** LockStore on PostgreSQL: each operation is one statement of pg-locks.sql.ts. */
export class PgLockStore extends LockStore {
  constructor(
    private readonly db: PgDatabase,
    private readonly signal: ReleaseSignal,
  ) {
    super();
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const [row] = await this.db.rows<AcquireRow>(ACQUIRE_SQL, [
      request.key,
      request.sessionId,
      request.ownerId,
      request.ttlMillis,
    ]);
    assert(row, 'acquire statement returned no row');
    switch (row.outcome) {
      case 'granted': {
        const grant = toGrant(request.key, row as GrantRow);
        this.db.issued(grant.fencingToken);
        return { kind: 'granted', grant };
      }
      case 'session_unknown':
        throw sessionGone('UNKNOWN');
      case 'session_expired':
        throw sessionGone('EXPIRED');
      case 'session_closed':
        throw sessionGone('CLOSED');
      case 'contended':
        return this.contended(request.key, row);
    }
  }

  /** The holder as the statement's snapshot saw it; re-read if that snapshot showed none. */
  private async contended(key: string, row: AcquireRow): Promise<AcquireResult> {
    if (row.session_id && row.owner_id && row.expires_at && row.expires_at > row.db_now) {
      return { kind: 'contended', holderOwnerId: row.owner_id, expiresAt: row.expires_at };
    }
    const { holder } = await this.inspect(key);
    return {
      kind: 'contended',
      holderOwnerId: holder?.ownerId ?? row.owner_id ?? '',
      expiresAt: holder?.expiresAt ?? row.db_now,
    };
  }

  async renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis?: number,
  ): Promise<LockGrant> {
    // The lease restarts with the TTL it was granted: an etcd lease cannot change
    // its TTL either, and both backends must answer alike (FR-09).
    void ttlMillis;
    const [row] = await this.db.rows<GrantRow>(RENEW_SQL, [
      key,
      formatFencingToken(token),
      sessionId,
    ]);
    if (row) {
      assert.equal(tokenFromDb(row.fencing_token), token, 'renew must never change the token');
      return toGrant(key, row);
    }
    const [diag] = await this.db.rows<{
      stored_token: string | null;
      session_alive: boolean | null;
      session_closed: boolean | null;
    }>(GRANT_DIAGNOSIS_SQL, [key, sessionId]);
    if (diag?.session_alive === null || diag?.session_alive === undefined) {
      throw sessionGone('UNKNOWN');
    }
    if (!diag.session_alive) throw sessionGone(diag.session_closed ? 'CLOSED' : 'EXPIRED');
    throw new LockLostError('the grant has expired, was released, revoked or taken over', {
      details: { storedToken: diag.stored_token },
    });
  }

  async release(key: string, token: FencingToken): Promise<void> {
    const rows = await this.db.rows(RELEASE_SQL, [key, formatFencingToken(token)]);
    if (rows.length === 0) {
      throw new LockLostError('the grant had already expired or was taken over');
    }
    this.signal.freed([key]);
  }

  async inspect(key: string): Promise<{ seen: boolean; holder: HeldLock | null }> {
    const [row] = await this.db.rows<GrantRow & { held: boolean }>(INSPECT_SQL, [key]);
    if (!row) return { seen: false, holder: null };
    if (!row.held) return { seen: true, holder: null };
    return { seen: true, holder: toGrant(key, row) };
  }

  async revoke(request: RevokeRequest): Promise<LockOutcome> {
    const expected =
      request.expectedToken === undefined ? null : formatFencingToken(request.expectedToken);
    const [row] = await this.db.rows<{
      revocation_id: string;
      revoked_token: string;
      new_token_floor: string;
    }>(REVOKE_SQL, [request.key, expected, request.operator, request.reason]);
    if (row) {
      const outcome: LockOutcome = {
        revokedToken: tokenFromDb(row.revoked_token),
        newTokenFloor: tokenFromDb(row.new_token_floor),
        revocationId: row.revocation_id,
      };
      assert(outcome.newTokenFloor > outcome.revokedToken, 'token floor must exceed revoked token');
      this.db.issued(outcome.newTokenFloor);
      this.signal.freed([request.key]);
      return outcome;
    }
    const { holder } = await this.inspect(request.key);
    if (
      holder &&
      request.expectedToken !== undefined &&
      holder.fencingToken !== request.expectedToken
    ) {
      throw new FencedOutError('expectedToken is not the live grant of this key', {
        details: {
          presentedToken: formatFencingToken(request.expectedToken),
          highestToken: formatFencingToken(holder.fencingToken),
        },
      });
    }
    throw new DlockError('NOT_FOUND', 'the key is not held');
  }

  waitForRelease(key: string, signal: AbortSignal): Promise<void> {
    return this.signal.next(key, signal);
  }

  async listHeld(limit: number): Promise<Listing<ListedLock>> {
    const rows = await this.db.rows<{
      lock_key: string;
      owner_id: string;
      session_id: string;
      fencing_token: string;
      lease_remaining_ms: number;
    }>(LIST_HELD_SQL, [limit + 1]);
    return {
      items: rows.slice(0, limit).map((r) => ({
        key: r.lock_key,
        ownerId: r.owner_id,
        sessionId: r.session_id,
        fencingToken: tokenFromDb(r.fencing_token),
        leaseRemainingMillis: r.lease_remaining_ms,
      })),
      truncated: rows.length > limit,
    };
  }

  async ping(): Promise<void> {
    await this.db.ping();
  }

  override async activity(): Promise<{ sessions: number; grants: number }> {
    const [row] = await this.db.rows<{ sessions: number; grants: number }>(ACTIVITY_SQL);
    return { sessions: row?.sessions ?? 0, grants: row?.grants ?? 0 };
  }
}
