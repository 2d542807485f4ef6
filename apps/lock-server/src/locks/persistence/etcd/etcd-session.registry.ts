import { randomUUID } from 'node:crypto';
import { liveSessionState, type SessionState } from '@dlock/lock-api';
import {
  SessionRegistry,
  type HeartbeatResult,
  type ListedSession,
  type Listing,
  type OpenedSession,
  type OwnerLoad,
} from '../lock-store.port';
import type { IKeyValue } from 'etcd3';
import {
  countAt,
  countPrefix,
  del,
  type EtcdGateway,
  firstAt,
  get,
  leaseSecondsFor,
  listPrefix,
  modRevisionIs,
  moreAt,
  put,
  rangeAt,
} from './etcd.gateway';
import { sessionGoneError, sessionGoneFrom } from './etcd-session.errors';
import type { EtcdSessionWatch } from './etcd-session-watch.loop';
import { decodeSession, encode, type SessionValue } from './etcd-values.codec';

/**
 * Live sessions one owner-load read looks through: etcd has no index by owner,
 * so the read is a bounded scan of session/ (opening a session is rare, and the
 * service reads an owner's load at most once a second per owner for acquires).
 */
const SESSIONS_SCANNED_MAX = 10_000;

/** L3's compare-and-put of the tombstone, re-done when a heartbeat moved it meanwhile. */
const CLOSE_TRIES_MAX = 3;

/**
 * Sessions on etcd: one lease per session (whole seconds, rounded up; the
 * granted TTL is reported back), the live key session/<sid> on it, and a
 * tombstone session-meta/<sid> on a day-long shared lease so an expired
 * session answers 410 rather than 404. Heartbeat = one lease keep-alive.
 * Leases survive leader elections (the new leader restarts every lease's
 * countdown), which is the docs/lock-server.md grace: no mass eviction on failover.
 */
export class EtcdSessionRegistry extends SessionRegistry {
  constructor(
    private readonly gw: EtcdGateway,
    private readonly watch: EtcdSessionWatch,
  ) {
    super();
  }

  override async open(ownerId: string, ttlMillis: number): Promise<OpenedSession> {
    const deadline = this.gw.deadline();
    const sessionId = randomUUID();
    const openedAtMs = Date.now();
    const lease = await this.gw.grant(leaseSecondsFor(ttlMillis), deadline);
    const value: SessionValue = { ownerId, ttlMillis: lease.ttlSeconds * 1000 };
    for (let attempt = 0; ; attempt++) {
      const retention = await this.gw.retentionLease(deadline);
      try {
        await this.gw.txn(
          [],
          [
            put(this.gw.keys.session(sessionId), encode(value), lease.id),
            put(this.gw.keys.sessionMeta(sessionId), encode(value), retention),
          ],
          [],
          deadline,
        );
        break;
      } catch (err) {
        // The shared retention lease may have been revoked by hand: take a new one, once.
        if (attempt === 0 && String(err).includes('requested lease not found')) {
          this.gw.forgetRetentionLease(retention);
          continue;
        }
        void this.gw.revokeQuietly(lease.id);
        throw err;
      }
    }
    return {
      sessionId,
      ownerId,
      ttlMillis: value.ttlMillis,
      expiresAt: new Date(openedAtMs + value.ttlMillis),
    };
  }

  override async heartbeat(sessionId: string): Promise<HeartbeatResult> {
    const deadline = this.gw.deadline();
    // A read, so it is re-sent through a member's fault like the keep-alive after it.
    const res = await this.gw.resending(deadline, (until) =>
      this.gw.read(
        [
          get(this.gw.keys.session(sessionId)),
          countPrefix(this.gw.keys.sessionLocksPrefix(sessionId)),
          get(this.gw.keys.sessionMeta(sessionId)),
        ],
        until,
      ),
    );
    const sessionKv = firstAt(res, 0);
    const metaKv = firstAt(res, 2);
    if (!sessionKv) throw sessionGoneFrom(metaKv);
    const sentAtMs = Date.now();
    const ttlSeconds = await this.gw.keepAliveOnce(sessionKv.lease, deadline);
    // The lease went meanwhile: expired, or closed by a concurrent L3 (the tombstone says).
    if (ttlSeconds <= 0) throw await sessionGoneError(this.gw, sessionId, deadline);
    this.keepTombstoneFresh(sessionId, metaKv);
    return {
      sessionId,
      expiresAt: new Date(sentAtMs + ttlSeconds * 1000),
      serverTime: new Date(),
      heldLockCount: countAt(res, 1),
    };
  }

  /**
   * Moves the tombstone to the newest retention lease (at most once per
   * rotation), so it outlives the session by the full retention. Best effort.
   */
  private keepTombstoneFresh(sessionId: string, metaKv: IKeyValue | undefined): void {
    const current = this.gw.currentRetentionLease();
    if (!metaKv || !current || metaKv.lease === current) return;
    const metaKey = this.gw.keys.sessionMeta(sessionId);
    this.gw
      .txn(
        [modRevisionIs(metaKey, BigInt(metaKv.mod_revision))],
        [put(metaKey, metaKv.value, current)],
        [],
        this.gw.deadline(),
      )
      .catch(() => undefined);
  }

  /**
   * L3, like pg (docs/lock-server.md, "Session states"): in one txn a live session's
   * tombstone is marked `closed` and its live key deleted (the compare on the tombstone makes
   * one of two concurrent closes win; the other reads CLOSED). Its lease is revoked and every
   * lock attached to it released before the answer. An expired session stays EXPIRED.
   */
  override async close(sessionId: string): Promise<void> {
    const deadline = this.gw.deadline();
    const sessionKey = this.gw.keys.session(sessionId);
    const metaKey = this.gw.keys.sessionMeta(sessionId);
    for (let attempt = 1; ; attempt++) {
      const res = await this.gw.read([get(sessionKey), get(metaKey)], deadline);
      const sessionKv = firstAt(res, 0);
      const metaKv = firstAt(res, 1);
      if (!sessionKv || (metaKv && decodeSession(metaKv).closed === true)) {
        const gone = sessionGoneFrom(metaKv);
        if (gone.code === 'SESSION_UNKNOWN' || gone.details?.state === 'CLOSED') throw gone;
        await this.watch.releaseLocksOf(sessionId); // EXPIRED: tidy, and answer 204
        return;
      }
      const closed: SessionValue = { ...decodeSession(sessionKv), closed: true };
      const retention = await this.gw.retentionLease(deadline);
      const marked = await this.gw.txn(
        [modRevisionIs(metaKey, BigInt(metaKv?.mod_revision ?? 0))],
        [put(metaKey, encode(closed), retention), del(sessionKey)],
        [],
        deadline,
      );
      if (!marked.succeeded) {
        if (attempt < CLOSE_TRIES_MAX) continue;
        throw new Error(`session ${sessionId}: its tombstone kept changing during L3`);
      }
      // The session died at that revision (its locks count as free from it on); its lease
      // and the locks' own leases go now.
      await this.gw.revoke(sessionKv.lease, deadline);
      await this.watch.releaseLocksOf(sessionId);
      return;
    }
  }

  /**
   * Console read: one bounded range over session/ (id order), each session's
   * lease TTL (whole seconds: etcd floors it) and its index entries counted.
   * A session whose lease is already gone is not listed.
   */
  /** From the tombstone, which outlives the live key by the retention (docs/lock-server-etcd.md). */
  override async ownerOf(sessionId: string): Promise<string | null> {
    const res = await this.gw.read([get(this.gw.keys.sessionMeta(sessionId))], this.gw.deadline());
    const kv = firstAt(res, 0);
    return kv ? decodeSession(kv).ownerId : null;
  }

  override async loadOf(ownerId: string): Promise<OwnerLoad> {
    const deadline = this.gw.deadline();
    const keys = this.gw.keys;
    const res = await this.gw.read(
      [listPrefix(keys.sessionsPrefix(), SESSIONS_SCANNED_MAX)],
      deadline,
    );
    const ids = rangeAt(res, 0)
      .filter((kv) => decodeSession(kv).ownerId === ownerId)
      .map((kv) => keys.sessionIdOf(kv.key));
    const counts = await this.gw.readMany(
      ids.map((id) => countPrefix(keys.sessionLocksPrefix(id))),
      deadline,
    );
    const locks = counts.flatMap((txn) => txn.responses.map((_, i) => countAt(txn, i)));
    return { sessions: ids.length, locks: locks.reduce((a, b) => a + b, 0) };
  }

  override async listLive(limit: number): Promise<Listing<ListedSession>> {
    const deadline = this.gw.deadline();
    const keys = this.gw.keys;
    const res = await this.gw.read([listPrefix(keys.sessionsPrefix(), limit + 1)], deadline);
    const sessions = rangeAt(res, 0);
    const ids = sessions.map((kv) => keys.sessionIdOf(kv.key));
    const [counts, ttls] = await Promise.all([
      this.gw.readMany(
        ids.map((id) => countPrefix(keys.sessionLocksPrefix(id))),
        deadline,
      ),
      this.gw.leaseRemainingSeconds(
        sessions.map((kv) => kv.lease),
        deadline,
      ),
    ]);
    const held = counts.flatMap((txn) => txn.responses.map((_, i) => countAt(txn, i)));
    const live = sessions.flatMap((kv, i): ListedSession[] => {
      if (ttls[i] < 0) return [];
      const value = decodeSession(kv);
      return [
        {
          sessionId: ids[i],
          ownerId: value.ownerId,
          state: liveSessionState(value.ttlMillis, ttls[i] * 1000),
          ttlMillis: value.ttlMillis,
          ttlRemainingMillis: ttls[i] * 1000,
          locksHeld: held[i],
        },
      ];
    });
    return { items: live.slice(0, limit), truncated: live.length > limit || moreAt(res, 0) };
  }

  /**
   * The gauge's counts: live sessions by their lease's remaining TTL, ended ones by their
   * tombstones (retained only), each range bounded by SESSIONS_SCANNED_MAX.
   */
  override async countByState(): Promise<Record<SessionState, number>> {
    const deadline = this.gw.deadline();
    const keys = this.gw.keys;
    const res = await this.gw.read(
      [
        listPrefix(keys.sessionsPrefix(), SESSIONS_SCANNED_MAX),
        listPrefix(keys.sessionMetasPrefix(), SESSIONS_SCANNED_MAX),
      ],
      deadline,
    );
    const live = rangeAt(res, 0);
    const liveIds = new Set(live.map((kv) => keys.sessionIdOf(kv.key)));
    const ttls = await this.gw.leaseRemainingSeconds(
      live.map((kv) => kv.lease),
      deadline,
    );
    const counts: Record<SessionState, number> = { ACTIVE: 0, SUSPECT: 0, EXPIRED: 0, CLOSED: 0 };
    live.forEach((kv, i) => {
      if (ttls[i] >= 0) counts[liveSessionState(decodeSession(kv).ttlMillis, ttls[i] * 1000)]++;
    });
    for (const meta of rangeAt(res, 1)) {
      if (decodeSession(meta).closed === true) counts.CLOSED++;
      else if (!liveIds.has(keys.sessionIdOfMeta(meta.key))) counts.EXPIRED++;
    }
    return counts;
  }
}
