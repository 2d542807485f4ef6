import assert from 'node:assert';
import { randomUUID } from 'node:crypto';
import {
  DlockError,
  FencedOutError,
  LockLostError,
  formatFencingToken,
  type FencingToken,
  type LockGrant,
  type LockOutcome,
} from '@dlock/lock-api';
import type { IKeyValue, ITxnResponse } from 'etcd3';
import {
  LockStore,
  type AcquireRequest,
  type AcquireResult,
  type HeldLock,
  type ListedLock,
  type Listing,
  type RevokeRequest,
} from '../lock-store.port';
import {
  createRevisionIs,
  del,
  deletedAt,
  type Deadline,
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
import { sessionGoneError } from './etcd-session.errors';
import type { EtcdSessionWatch } from './etcd-session-watch.loop';
import {
  decodeLock,
  decodeSessionLock,
  encode,
  type LockValue,
  type RevocationRecord,
} from './etcd-values.codec';

/** Re-reads after a race (holder reaped or changed under us) before answering. */
const ACQUIRE_ATTEMPTS_MAX = 4;
const REVOKE_ATTEMPTS_MAX = 3;

const releaseLost = () => new LockLostError('the grant had already expired or was taken over');

/** A lock key as read, with the facts needed to decide whether it is still held. */
interface Incarnation {
  kv: IKeyValue;
  value: LockValue;
  token: FencingToken;
  leaseId: string;
}

function incarnation(kv: IKeyValue): Incarnation {
  const token = BigInt(kv.create_revision);
  // Never re-put while held (docs/contract.md): a differing mod revision is a defect, not a race.
  assert.equal(kv.mod_revision, kv.create_revision, 'etcd lock key was re-put while held');
  return { kv, value: decodeLock(kv), token, leaseId: kv.lease };
}

/**
 * LockStore on etcd (issue 9). Token = the revision of the txn that created
 * the lock key (`create_revision == 0` compare); every later write of the
 * cluster has a higher revision, so tokens increase by construction, and a
 * revoke's own revision is the new floor. Expiry is etcd's lease decision: the
 * lock key lives on its own lease, and a lock whose session key is gone
 * counts as free (session death) — see docs/lock-server-etcd.md.
 */
export class EtcdLockStore extends LockStore {
  constructor(
    private readonly gw: EtcdGateway,
    private readonly sessions: EtcdSessionWatch,
  ) {
    super();
  }

  private get keys() {
    return this.gw.keys;
  }

  override async acquire(req: AcquireRequest): Promise<AcquireResult> {
    const deadline = this.gw.deadline();
    const acquiredAtMs = Date.now();
    const lease = await this.gw.resending(deadline, (until) =>
      this.gw.grant(leaseSecondsFor(req.ttlMillis), until),
    );
    // Whether a creating txn on this lease went unanswered: it may have
    // committed, and the holder's retry is then handed that grant (docs/lock-server.md),
    // so revoking the lease would delete the key under it with no compare
    // (issue 20). Such a lease is left to its TTL instead.
    let createUnanswered = false;
    let granted = false;
    try {
      // The holder most recently seen; answered as contention if the key keeps
      // changing hands faster than this loop (bounded: no grant, no token minted).
      let lastSeen: { holderOwnerId: string; expiresAt: Date } | null = null;
      for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS_MAX; attempt++) {
        const expiresAtMs = acquiredAtMs + lease.ttlSeconds * 1000;
        const res = await this.gw.resending(deadline, async (until) => {
          try {
            return await this.createTxn(req, lease.id, acquiredAtMs, expiresAtMs, until);
          } catch (err) {
            createUnanswered = true;
            throw err;
          }
        });
        if (res.succeeded) {
          granted = true;
          return {
            kind: 'granted',
            grant: {
              key: req.key,
              ownerId: req.ownerId,
              sessionId: req.sessionId,
              fencingToken: BigInt(res.header.revision),
              acquiredAt: new Date(acquiredAtMs),
              expiresAt: new Date(expiresAtMs),
            },
          };
        }
        if (!firstAt(res, 1)) throw await sessionGoneError(this.gw, req.sessionId, deadline);
        const lockKv = firstAt(res, 0);
        if (!lockKv) continue; // cannot happen within one txn; re-try rather than assume
        const holder = incarnation(lockKv);
        if (holder.value.sessionId === req.sessionId && holder.value.ownerId === req.ownerId) {
          // docs/lock-server.md: a retried acquire by the holder gets the same grant, no new token.
          return { kind: 'granted', grant: this.grantOf(req.key, holder, firstAt(res, 2)) };
        }
        const state = await this.holderState(req.key, holder, deadline);
        if (state.kind === 'held') {
          return {
            kind: 'contended',
            holderOwnerId: holder.value.ownerId,
            expiresAt: new Date(state.expiresAtMs),
          };
        }
        if (state.kind === 'changed') {
          lastSeen = { holderOwnerId: holder.value.ownerId, expiresAt: new Date() };
        }
      }
      if (lastSeen) return { kind: 'contended', ...lastSeen };
      throw new DlockError('NOT_LEADER', 'the lock changed hands repeatedly; retry', {
        retryAfterMillis: this.gw.config.notLeaderRetryAfterMs,
      });
    } finally {
      if (!granted && !createUnanswered) void this.gw.revokeQuietly(lease.id);
    }
  }

  /** If the key is free and the session alive: the lock key, the session's index entry, seen/<key>. */
  private createTxn(
    req: AcquireRequest,
    leaseId: string,
    acquiredAtMs: number,
    expiresAtMs: number,
    deadline: Deadline,
  ): Promise<ITxnResponse> {
    const lockKey = this.keys.lock(req.key);
    return this.gw.txn(
      [
        createRevisionIs(lockKey, 'Equal', 0),
        createRevisionIs(this.keys.session(req.sessionId), 'Greater', 0),
      ],
      [
        put(
          lockKey,
          encode({ ownerId: req.ownerId, sessionId: req.sessionId, acquiredAtMs }),
          leaseId,
        ),
        put(this.keys.sessionLock(req.sessionId, req.key), encode({ expiresAtMs }), leaseId),
        put(this.keys.seen(req.key), Buffer.alloc(0)),
      ],
      [
        get(lockKey),
        get(this.keys.session(req.sessionId)),
        get(this.keys.sessionLock(req.sessionId, req.key)),
      ],
      deadline,
    );
  }

  /**
   * Whether a found incarnation is still held. Its session key gone means the
   * session died (docs/lock-server.md: that releases the lock) — the key is deleted right
   * here, compare-on-token, so the next create can proceed.
   */
  private async holderState(
    key: string,
    holder: Incarnation,
    deadline: Deadline,
  ): Promise<{ kind: 'held'; expiresAtMs: number } | { kind: 'reaped' } | { kind: 'changed' }> {
    const lockKey = this.keys.lock(key);
    const holderSession = this.keys.session(holder.value.sessionId);
    const indexKey = this.keys.sessionLock(holder.value.sessionId, key);
    const res = await this.gw.txn(
      [modRevisionIs(lockKey, holder.token), createRevisionIs(holderSession, 'Equal', 0)],
      [del(lockKey), del(indexKey)],
      [get(lockKey), get(holderSession), get(indexKey)],
      deadline,
    );
    if (res.succeeded) {
      void this.gw.revokeQuietly(holder.leaseId);
      return { kind: 'reaped' };
    }
    const now = firstAt(res, 0);
    if (!now || now.create_revision !== holder.kv.create_revision) return { kind: 'changed' };
    const indexKv = firstAt(res, 2);
    return {
      kind: 'held',
      expiresAtMs: indexKv ? decodeSessionLock(indexKv).expiresAtMs : Date.now(),
    };
  }

  private grantOf(key: string, holder: Incarnation, indexKv: IKeyValue | undefined): LockGrant {
    return {
      key,
      ownerId: holder.value.ownerId,
      sessionId: holder.value.sessionId,
      fencingToken: holder.token,
      acquiredAt: new Date(holder.value.acquiredAtMs),
      expiresAt: new Date(
        indexKv ? decodeSessionLock(indexKv).expiresAtMs : holder.value.acquiredAtMs,
      ),
    };
  }

  override async renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    _ttlMillis?: number,
  ): Promise<LockGrant> {
    const deadline = this.gw.deadline();
    const lockKey = this.keys.lock(key);
    const sessionKey = this.keys.session(sessionId);
    const seenKey = this.keys.seen(key);
    const res = await this.gw.txn(
      [modRevisionIs(lockKey, token), createRevisionIs(sessionKey, 'Greater', 0)],
      [get(lockKey), get(seenKey)],
      [get(lockKey), get(seenKey), get(sessionKey)],
      deadline,
    );
    if (!res.succeeded && !firstAt(res, 2)) {
      throw await sessionGoneError(this.gw, sessionId, deadline);
    }
    const lockKv = firstAt(res, 0);
    if (!res.succeeded || !lockKv) throw this.lockLost(firstAt(res, 1));
    const holder = incarnation(lockKv);
    if (holder.value.sessionId !== sessionId) throw this.lockLost(firstAt(res, 1));
    // The lease keeps its granted TTL: an etcd lease's TTL is fixed at grant, and
    // changing it would need a re-put of the key, which would move the token.
    const renewedAtMs = Date.now();
    const ttlSeconds = await this.gw.keepAliveOnce(holder.leaseId, deadline);
    if (ttlSeconds <= 0) throw await this.lockLostNow(key, deadline);
    const expiresAtMs = renewedAtMs + ttlSeconds * 1000;
    const indexKey = this.keys.sessionLock(sessionId, key);
    const recorded = await this.gw.txn(
      [modRevisionIs(lockKey, token)],
      [put(indexKey, encode({ expiresAtMs }), holder.leaseId)],
      [get(seenKey)],
      deadline,
    );
    if (!recorded.succeeded) throw this.lockLost(firstAt(recorded, 0));
    return {
      key,
      ownerId: holder.value.ownerId,
      sessionId,
      fencingToken: token,
      acquiredAt: new Date(holder.value.acquiredAtMs),
      expiresAt: new Date(expiresAtMs),
    };
  }

  /**
   * L5's LOCK_LOST, as on pg: details.storedToken is the key's latest token
   * (live or not), null for a key never acquired. seen/<key> is written in
   * every creating txn and nowhere else, so its mod revision is that token.
   */
  private lockLost(seenKv: IKeyValue | undefined): LockLostError {
    return new LockLostError('the grant has expired, was released, revoked or taken over', {
      details: {
        storedToken: seenKv ? formatFencingToken(BigInt(seenKv.mod_revision)) : null,
      },
    });
  }

  private async lockLostNow(key: string, deadline: Deadline): Promise<LockLostError> {
    const res = await this.gw.read([get(this.keys.seen(key))], deadline);
    return this.lockLost(firstAt(res, 0));
  }

  override async release(key: string, token: FencingToken, sessionId: string): Promise<void> {
    const deadline = this.gw.deadline();
    const lockKey = this.keys.lock(key);
    // One txn at one revision: the delete named by the token, the index entry of the
    // session the proof names, and that session's key (docs/lock-server-etcd.md, "The token").
    const res = await this.gw.txn(
      [modRevisionIs(lockKey, token)],
      [
        del(lockKey, true),
        del(this.keys.sessionLock(sessionId, key)),
        get(this.keys.session(sessionId)),
      ],
      [],
      deadline,
    );
    if (!res.succeeded) throw releaseLost();
    const prev = deletedAt(res, 0)[0];
    if (!prev) throw releaseLost();
    const holderSessionId = decodeLock(prev).sessionId;
    // Was the holder's session alive at the delete's revision? If not, the grant had
    // already been released by its session's death (the delete only tidied a free key),
    // and the answer is LOCK_LOST as on pg.
    if (holderSessionId === sessionId) {
      // A genuine proof names the holder's session, so both keys on the grant's own lease
      // went in this txn, and nothing can put on that lease again (renew compares the
      // token): it carries nothing and is left to its TTL, no revoke call.
      if (!firstAt(res, 2)) throw releaseLost();
      return;
    }
    // A proof naming another session (never a genuine proof of this incarnation): the
    // holder's session is read at the delete's revision, and revoking the grant's lease
    // drops the holder's index entry; the lease id is unique to this incarnation.
    const [sessionAtDelete] = await Promise.all([
      this.gw.getAt(this.keys.session(holderSessionId), res.header.revision, deadline),
      this.gw.revokeQuietly(prev.lease),
    ]);
    if (!sessionAtDelete) throw releaseLost();
  }

  override async inspect(key: string): Promise<{ seen: boolean; holder: HeldLock | null }> {
    const deadline = this.gw.deadline();
    const res = await this.gw.read([get(this.keys.lock(key)), get(this.keys.seen(key))], deadline);
    const lockKv = firstAt(res, 0);
    const seen = lockKv !== undefined || firstAt(res, 1) !== undefined;
    if (!lockKv) return { seen, holder: null };
    const holder = incarnation(lockKv);
    const live = await this.liveHolder(key, holder, deadline);
    return { seen: true, holder: live };
  }

  /** The holder if its session is alive (a dead session's locks are free), at one revision. */
  private async liveHolder(
    key: string,
    holder: Incarnation,
    deadline: Deadline,
  ): Promise<HeldLock | null> {
    const res = await this.gw.read(
      [
        get(this.keys.lock(key)),
        get(this.keys.session(holder.value.sessionId)),
        get(this.keys.sessionLock(holder.value.sessionId, key)),
      ],
      deadline,
    );
    const now = firstAt(res, 0);
    if (!now || now.create_revision !== holder.kv.create_revision || !firstAt(res, 1)) return null;
    return this.grantOf(key, holder, firstAt(res, 2));
  }

  override async revoke(req: RevokeRequest): Promise<LockOutcome> {
    const deadline = this.gw.deadline();
    const lockKey = this.keys.lock(req.key);
    for (let attempt = 0; attempt < REVOKE_ATTEMPTS_MAX; attempt++) {
      const read = await this.gw.read([get(lockKey)], deadline);
      const lockKv = firstAt(read, 0);
      const holder = lockKv ? incarnation(lockKv) : null;
      const live = holder ? await this.liveHolder(req.key, holder, deadline) : null;
      if (!holder || !live) {
        throw new DlockError('NOT_FOUND', 'the key is not held');
      }
      if (req.expectedToken !== undefined && req.expectedToken !== holder.token) {
        throw new FencedOutError('expectedToken is not the live grant of this key', {
          details: {
            presentedToken: formatFencingToken(req.expectedToken),
            highestToken: formatFencingToken(holder.token),
          },
        });
      }
      const revocationId = randomUUID();
      const record: RevocationRecord = {
        key: req.key,
        operator: req.operator,
        reason: req.reason,
        revokedToken: formatFencingToken(holder.token),
        holderOwnerId: holder.value.ownerId,
        holderSessionId: holder.value.sessionId,
        revokedAt: new Date().toISOString(),
      };
      const res = await this.gw.txn(
        [modRevisionIs(lockKey, holder.token)],
        [
          del(lockKey),
          del(this.keys.sessionLock(holder.value.sessionId, req.key)),
          put(this.keys.revocation(req.key, revocationId), encode(record)),
        ],
        [],
        deadline,
      );
      if (!res.succeeded) continue;
      // The delete's own revision: above the revoked token, below every later grant.
      const newTokenFloor = BigInt(res.header.revision);
      assert.ok(newTokenFloor > holder.token, 'revocation floor must exceed the revoked token');
      await this.gw.revokeQuietly(holder.leaseId);
      return { revokedToken: holder.token, newTokenFloor, revocationId };
    }
    throw new DlockError('NOT_LEADER', `lock ${req.key} changed hands during the revoke; retry`, {
      retryAfterMillis: this.gw.config.notLeaderRetryAfterMs,
    });
  }

  override async waitForRelease(key: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const res = await this.gw.read([get(this.keys.lock(key))], this.gw.deadline());
    const lockKv = firstAt(res, 0);
    // Aborted during the read: an abort listener added now would never fire.
    if (!lockKv || signal.aborted) return;
    const holderSessionId = decodeLock(lockKv).sessionId;
    await new Promise<void>((resolve) => {
      // Watch from the revision just read: no delete after the read can be missed.
      const watcher = this.gw.watchKey(
        this.keys.lock(key),
        (BigInt(res.header.revision) + 1n).toString(),
      );
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', finish);
        unsubscribe();
        watcher.removeAllListeners();
        watcher.on('error', () => undefined);
        watcher.cancel().catch(() => undefined);
        resolve();
      };
      signal.addEventListener('abort', finish);
      const unsubscribe = this.sessions.onSessionGone(holderSessionId, finish);
      watcher.on('delete', finish);
      watcher.on('error', finish);
    });
  }

  /**
   * Console read: one bounded range over lock/ (key order = byte order), then
   * each holder's session key and index entry, so a lock whose session died
   * is not listed (as L7 would not call it held). The time left is the
   * expiry the holder was last granted, as L7's expiresAt.
   */
  override async listHeld(limit: number): Promise<Listing<ListedLock>> {
    const deadline = this.gw.deadline();
    const prefix = this.keys.locksPrefix();
    const res = await this.gw.read([listPrefix(prefix, limit + 1)], deadline);
    const found = rangeAt(res, 0).map((kv) => ({
      key: kv.key.toString().slice(prefix.length),
      holder: incarnation(kv),
    }));
    const checks = await this.gw.readMany(
      found.flatMap(({ key, holder }) => [
        get(this.keys.session(holder.value.sessionId)),
        get(this.keys.sessionLock(holder.value.sessionId, key)),
      ]),
      deadline,
    );
    const answers = checks.flatMap((txn) => txn.responses.map((_, i) => firstAt(txn, i)));
    const nowMs = Date.now();
    const live = found.flatMap(({ key, holder }, i): ListedLock[] => {
      const [sessionKv, indexKv] = [answers[2 * i], answers[2 * i + 1]];
      if (!sessionKv || !indexKv) return [];
      return [
        {
          key,
          ownerId: holder.value.ownerId,
          sessionId: holder.value.sessionId,
          fencingToken: holder.token,
          leaseRemainingMillis: Math.max(0, decodeSessionLock(indexKv).expiresAtMs - nowMs),
        },
      ];
    });
    return { items: live.slice(0, limit), truncated: live.length > limit || moreAt(res, 0) };
  }

  override async ping(): Promise<void> {
    await this.gw.ping();
  }

  /** Gauges: live session keys and lock keys (a lock of a just-dead session counts until reaped). */
  override async activity(): Promise<{ sessions: number; grants: number }> {
    const [sessions, grants] = await this.gw.count([
      this.keys.sessionsPrefix(),
      this.keys.locksPrefix(),
    ]);
    return { sessions: sessions ?? 0, grants: grants ?? 0 };
  }
}
