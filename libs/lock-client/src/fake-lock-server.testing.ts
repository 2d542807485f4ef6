import { randomUUID } from 'node:crypto';
import { monotonicClock, type Clock } from './clock';
import {
  envelope,
  fakeTransport,
  ok,
  route,
  unreachable,
  type FakeReply,
  type RecordedRequest,
} from './fakes.testing';
import type { Transport } from './transport';

interface FakeSession {
  ownerId: string;
  ttlMillis: number;
  state: 'open' | 'expired' | 'closed';
}

interface FakeLock {
  key: string;
  ownerId: string;
  sessionId: string;
  fencingToken: bigint;
  acquiredAt: string;
  ttlMillis: number;
}

export interface FakeLockServerOptions {
  /** The first token handed out (default 1): start high to test tokens above 2^53. */
  firstToken?: bigint;
  /** Stamps the recorded requests' `sentAtMs`; the SDK's own clock is the client's option. */
  clock?: Clock;
}

/**
 * An in-memory lock-server for an application's unit tests (docs/extending.md,
 * "Testing"): pass `transport` as the `LockClient` (or `LockClientModule`)
 * option and no process or network is needed. It speaks the lock-server's
 * wire contract for sessions, acquire, renew and release; tokens only grow.
 * A key held by another session answers LOCK_CONTENDED. Leases and sessions
 * do not run out on their own: `revoke` and `expireSession` end them, as an
 * operator or a long pause would, and `down` makes it unreachable.
 */
export class FakeLockServer {
  /** The SDK's `transport` option; `transport.requests` records every call. */
  readonly transport: Transport & { requests: RecordedRequest[] };
  /** While true every call fails as an unreachable lock-server does (UNAVAILABLE, nothing sent). */
  down = false;
  private nextToken: bigint;
  private readonly sessions = new Map<string, FakeSession>();
  private readonly locks = new Map<string, FakeLock>();

  constructor(options: FakeLockServerOptions = {}) {
    this.nextToken = options.firstToken ?? 1n;
    this.transport = fakeTransport(options.clock ?? monotonicClock, (req) => this.answer(req));
  }

  /** Who holds `key` now, with which token; undefined when it is free. */
  holder(key: string): { ownerId: string; sessionId: string; fencingToken: bigint } | undefined {
    const lock = this.locks.get(key);
    return (
      lock && { ownerId: lock.ownerId, sessionId: lock.sessionId, fencingToken: lock.fencingToken }
    );
  }

  /**
   * An operator's force-revoke: the key is free at once and its next grant
   * gets a newer token. The holder is not told: its next renew answers
   * LOCK_LOST, and until then only a fence can stop it. Returns the revoked token.
   */
  revoke(key: string): bigint | undefined {
    const lock = this.locks.get(key);
    this.locks.delete(key);
    return lock?.fencingToken;
  }

  /** The session ends server-side (no heartbeat got through): its calls answer SESSION_EXPIRED, its keys are free. */
  expireSession(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (session) session.state = 'expired';
    this.freeLocksOf(sessionId);
  }

  /** The ids of the sessions opened so far, oldest first, with their owners and states. */
  listSessions(): { sessionId: string; ownerId: string; state: FakeSession['state'] }[] {
    return [...this.sessions].map(([sessionId, s]) => ({ sessionId, ...s }));
  }

  private answer(req: RecordedRequest): FakeReply {
    if (this.down) return unreachable('connect');
    const now = Date.now();
    switch (route(req)) {
      case 'open': {
        const sessionId = randomUUID();
        const ttlMillis = Number(req.json.ttlMillis);
        const ownerId = req.headers['x-owner-id'];
        this.sessions.set(sessionId, { ownerId, ttlMillis, state: 'open' });
        return ok(201, { sessionId, ownerId, ttlMillis, expiresAt: iso(now + ttlMillis) });
      }
      case 'heartbeat': {
        const sessionId = decodeURIComponent(req.url.pathname.split('/')[3]);
        const refused = this.sessionRefusal(sessionId);
        if (refused) return refused;
        const held = [...this.locks.values()].filter((l) => l.sessionId === sessionId).length;
        return ok(200, {
          sessionId,
          expiresAt: iso(now + this.sessions.get(sessionId)!.ttlMillis),
          serverTime: iso(now),
          heldLockCount: held,
        });
      }
      case 'close': {
        const sessionId = decodeURIComponent(req.url.pathname.split('/')[3]);
        const refused = this.sessionRefusal(sessionId);
        if (refused) return refused;
        this.sessions.get(sessionId)!.state = 'closed';
        this.freeLocksOf(sessionId);
        return ok(204);
      }
      case 'acquire':
        return this.acquire(req, now);
      case 'renew':
      case 'release':
        return this.renewOrRelease(req, now);
    }
  }

  private acquire(req: RecordedRequest, now: number): FakeReply {
    const key = decodeURIComponent(req.url.pathname.split('/')[3]);
    const sessionId = String(req.json.sessionId);
    const refused = this.sessionRefusal(sessionId);
    if (refused) return refused;
    let lock = this.locks.get(key);
    if (lock && lock.sessionId !== sessionId)
      return envelope('LOCK_CONTENDED', { retryAfterMillis: 50 });
    // The same session asking again gets the same grant and token (docs/contract.md).
    lock ??= {
      key,
      ownerId: this.sessions.get(sessionId)!.ownerId,
      sessionId,
      fencingToken: this.nextToken++,
      acquiredAt: iso(now),
      ttlMillis: Number(req.json.ttlMillis),
    };
    this.locks.set(key, lock);
    return ok(200, grant(lock, now, Number(req.json.ttlMillis)));
  }

  private renewOrRelease(req: RecordedRequest, now: number): FakeReply {
    if (req.method === 'GET') return envelope('NOT_FOUND'); // reads are not faked
    const key = decodeURIComponent(req.url.pathname.split('/')[3]);
    const sessionId = String(req.json?.sessionId);
    const refused = this.sessionRefusal(sessionId);
    if (refused) return refused;
    const lock = this.locks.get(key);
    if (
      !lock ||
      lock.sessionId !== sessionId ||
      `${lock.fencingToken}` !== req.headers['x-fencing-token']
    )
      return envelope('LOCK_LOST');
    if (route(req) === 'release') {
      this.locks.delete(key);
      return ok(204);
    }
    // A renew extends the lease from now, by the TTL it asks or the one the lock was taken with.
    return ok(200, grant(lock, now, Number(req.json.ttlMillis ?? lock.ttlMillis)));
  }

  private sessionRefusal(sessionId: string): FakeReply | undefined {
    const session = this.sessions.get(sessionId);
    // As the lock-server answers an ended session it still remembers (docs/lock-server.md).
    if (!session) return envelope('SESSION_UNKNOWN');
    if (session.state === 'closed') {
      return envelope('SESSION_EXPIRED', { details: { state: 'CLOSED' } });
    }
    if (session.state === 'expired') {
      return envelope('SESSION_EXPIRED', { details: { state: 'EXPIRED' } });
    }
    return undefined;
  }

  private freeLocksOf(sessionId: string): void {
    for (const [key, lock] of this.locks) if (lock.sessionId === sessionId) this.locks.delete(key);
  }
}

function grant(lock: FakeLock, now: number, ttlMillis: number) {
  return {
    key: lock.key,
    ownerId: lock.ownerId,
    sessionId: lock.sessionId,
    fencingToken: `${lock.fencingToken}`,
    acquiredAt: lock.acquiredAt,
    expiresAt: iso(now + ttlMillis),
    // Unsigned: a fake's grant proves nothing, and no real fence point accepts it.
    grantProof: `fake-proof.${lock.key}.${lock.fencingToken}`,
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
