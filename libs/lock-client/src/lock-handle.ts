import assert from 'node:assert/strict';
import {
  DlockError,
  LockLostError,
  type FenceCredential,
  type FencingToken,
} from '@dlock/lock-api';
import type { Timer } from './clock';
import { conservativeDeadlineMs, grantedLockTtlMs } from './deadline';
import { OnceListeners } from './listeners';
import { LockServerUnavailableError } from './errors';
import { CALL_BUDGETS, RENEW_TRIES, type LossReason, type ResolvedOptions } from './options';
import type { LeaseBounds } from './key-history';
import type { LockServerApi, ProvenGrant } from './wire';

/** A renew failure that says nothing about the lock: no answer, or not the leader. */
function renewRetryable(err: unknown): boolean {
  return (
    err instanceof LockServerUnavailableError ||
    (err instanceof DlockError && err.code === 'NOT_LEADER')
  );
}

/** What a handle needs from the session that owns it. */
export interface HandleHost {
  readonly sessionId: string;
  readonly options: ResolvedOptions;
  readonly api: LockServerApi;
  /** The session's local deadline (monotonic ms). */
  readonly deadline: number;
  /** Passes judgement on the session deadline now (timers can run late). */
  checkSessionDeadline(): void;
  /** A renew answered a session code: the whole session is gone. */
  sessionLostByServer(error: DlockError): void;
  /** This handle was lost on its own (lease deadline, renew LOCK_LOST). */
  handleLost(handle: LockHandle, reason: LossReason, error: LockLostError): void;
  /** This handle ends: released or lost. */
  forget(handle: LockHandle): void;
  /** L6 for this grant, recorded until an answer settles it (docs/lock-client.md). */
  releaseGrant(key: string, fence: FenceCredential): Promise<void>;
  /** False once the server released every lock of the session (L3 sent, or it expired). */
  readonly serverMayHoldLocks: boolean;
}

export type HandleState = 'held' | 'lost' | 'released';

/** Whether this lock's own lease, as the client sees it, covers a call's whole budget. */
export interface LeaseVerdict {
  ok: boolean;
  remainingMs: number;
  requiredMs: number;
}

export interface RenewOptions {
  /** New lease length; defaults to the TTL the lock was acquired with. */
  ttlMs?: number;
  signal?: AbortSignal;
}

/**
 * One granted lock. The fencing token is handed over here and nowhere else:
 * pass `handle.fence` (the token and the lock-server's proof of it)
 * explicitly to every protected write (FR-15, docs/security.md).
 *
 * Liveness only (docs/lock-client.md): `checkStillHeld()` and `signal` narrow the window
 * in which a worker keeps going after losing the lease; the token at the
 * resource is what keeps the data safe.
 */
export class LockHandle {
  readonly key: string;
  readonly fencingToken: FencingToken;
  /** The lock-server's signature over this grant: fence points refuse a token without it. */
  readonly grantProof: string;
  /** What a fenced write presents: the token and its proof, together. */
  readonly fence: FenceCredential;
  readonly ownerId: string;
  readonly sessionId: string;
  /** Server instant the lock was granted (for humans; never used for timing). */
  readonly acquiredAt: Date;
  /** TTL this lock was acquired with; renew() reuses it by default. */
  readonly ttlMs: number;

  private stateValue: HandleState = 'held';
  private expiresAtValue: Date;
  private leaseDeadlineMs: number;
  /** The lease length the acquire was granted; renews never assume more. */
  private readonly grantedTtlMs: number;
  private leaseTimer: Timer | undefined;
  private lostError: LockLostError | undefined;
  private releaseSent = false;
  private readonly abort = new AbortController();
  private readonly lostListeners: OnceListeners<LockLostError>;

  /** @internal Created by LockSession only. */
  constructor(
    private readonly host: HandleHost,
    grant: ProvenGrant,
    ttlMs: number,
    lease: LeaseBounds,
  ) {
    this.key = grant.key;
    this.fencingToken = grant.fencingToken;
    this.grantProof = grant.proof;
    this.fence = Object.freeze({ token: grant.fencingToken, proof: grant.proof });
    this.ownerId = grant.ownerId;
    this.sessionId = grant.sessionId;
    this.acquiredAt = grant.acquiredAt;
    this.ttlMs = ttlMs;
    this.expiresAtValue = grant.expiresAt;
    this.lostListeners = new OnceListeners(host.options.logger, `onLockLost(${grant.key})`);
    this.grantedTtlMs = grantedLockTtlMs(ttlMs, grant);
    // An old grant answered again keeps its old deadline (docs/lock-client.md, "Acquiring a
    // key again on the same session"): counting it from the new send would outlast the server.
    this.leaseDeadlineMs = Math.min(
      conservativeDeadlineMs(lease.fromMs, this.grantedTtlMs, host.options.safetyMargin),
      lease.capMs,
    );
    this.armLeaseTimer();
  }

  get state(): HandleState {
    return this.stateValue;
  }

  /** The server's expiry of the lease as last granted (wall clock; informational). */
  get expiresAt(): Date {
    return this.expiresAtValue;
  }

  /** Local monotonic deadline: the earlier of this lease's and the session's. */
  get deadline(): number {
    return Math.min(this.leaseDeadlineMs, this.host.deadline);
  }

  /** Aborts, with the LockLostError as reason, the moment the lock is lost. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Milliseconds left before the client considers the lock lost; 0 once it is not held. */
  remainingMs(): number {
    if (this.stateValue !== 'held') return 0;
    return Math.max(0, this.deadline - this.host.options.clock.nowMs());
  }

  /** @internal The lease deadline (monotonic ms), whatever the state. */
  get leaseEndsAtMs(): number {
    return this.leaseDeadlineMs;
  }

  /**
   * Milliseconds left on this lock's own lease (margin already taken off),
   * ignoring the session deadline: the heartbeat keeps pushing that one
   * forward, so it never predicts a call longer than a third of the session
   * TTL (docs/executor.md, lease discipline). 0 once the lock is not held.
   */
  leaseRemainingMs(): number {
    if (this.stateValue !== 'held') return 0;
    return Math.max(0, this.leaseDeadlineMs - this.host.options.clock.nowMs());
  }

  /**
   * May a call whose worst case is `budgetMs` start now? Only while the
   * lease left covers all of it: a call the lease cannot cover may finish
   * after a newer holder got the key, and then only the fence saves the data.
   */
  leaseCovers(budgetMs: number): LeaseVerdict {
    assert.ok(Number.isFinite(budgetMs) && budgetMs >= 0, 'budgetMs must be a finite ms count');
    const remainingMs = this.leaseRemainingMs();
    return { ok: remainingMs >= budgetMs, remainingMs, requiredMs: budgetMs };
  }

  /**
   * Call before every side effect (FR-13). Returns normally only while the
   * local deadline is in the future; otherwise throws LockLostError. There
   * is deliberately no boolean variant to forget to check.
   */
  checkStillHeld(): void {
    if (this.stateValue === 'held') {
      const now = this.host.options.clock.nowMs();
      // Timers can fire late under load; the clock is the authority, not the timer.
      if (now >= this.host.deadline) this.host.checkSessionDeadline();
      if (this.stateValue === 'held' && now >= this.leaseDeadlineMs) this.leaseExpired();
    }
    if (this.stateValue === 'held') return;
    throw this.lostError ?? this.makeError('lock released', 'released');
  }

  /** Registers a loss listener; returns an unsubscribe function. Fires at most once. */
  onLockLost(listener: (error: LockLostError) => void): () => void {
    return this.lostListeners.add(listener);
  }

  /**
   * L5 with one retry (docs/contract.md), only after a transport failure or
   * NOT_LEADER. Extends the lease; the token never changes. A lost lock is
   * never renewed back to life: re-acquire and re-read state instead.
   */
  async renew(options: RenewOptions = {}): Promise<void> {
    const ttlMs = options.ttlMs ?? this.ttlMs;
    const { clock, safetyMargin } = this.host.options;
    let sentAtMs = 0;
    let grant: ProvenGrant | undefined;
    for (let tryIndex = 0; grant === undefined; tryIndex++) {
      this.checkStillHeld();
      sentAtMs = clock.nowMs();
      try {
        grant = await this.host.api.renew(this.key, this.sessionId, this.fencingToken, ttlMs, {
          budget: CALL_BUDGETS.renew,
          signal: options.signal,
        });
      } catch (err) {
        if (tryIndex + 1 < RENEW_TRIES && renewRetryable(err) && !options.signal?.aborted) continue;
        if (err instanceof DlockError) {
          if (err.code === 'LOCK_LOST') this.markLost('lock_lost', err);
          else if (err.code === 'SESSION_EXPIRED' || err.code === 'SESSION_UNKNOWN')
            this.host.sessionLostByServer(err);
        }
        throw err;
      }
    }
    // Lost while the renew was in flight: the client already said so, and that is final.
    this.checkStillHeld();
    assert.equal(grant.fencingToken, this.fencingToken, 'renew must never re-issue a token');
    assert.equal(grant.key, this.key, 'renew answered for another key');
    // A renew never buys more than the first grant carried: an etcd lease keeps
    // the TTL it was created with, whatever the renew asked for (FR-09 parity).
    const renewedMs = conservativeDeadlineMs(
      sentAtMs,
      Math.min(ttlMs, this.grantedTtlMs),
      safetyMargin,
    );
    // Replaced, not maxed: a renew with a shorter TTL shortens the server's lease too.
    this.leaseDeadlineMs = renewedMs;
    this.expiresAtValue = grant.expiresAt;
    this.armLeaseTimer();
  }

  /**
   * L6, one try and never retried: lease expiry is the fallback (docs/contract.md).
   * Never rejects — it is meant for `finally`. Resolves true when the server
   * confirmed the release, false otherwise (already lost: LOCK_LOST is
   * benign; or the call failed and the lease will lapse on its own).
   */
  async release(): Promise<boolean> {
    if (this.releaseSent) return false;
    this.releaseSent = true;
    const wasHeld = this.stateValue === 'held';
    if (wasHeld) {
      this.stateValue = 'released';
      this.leaseTimer?.cancel();
      this.host.forget(this);
    }
    // A locally lost lock may still be held server-side (the margin); releasing frees it early.
    if (!this.host.serverMayHoldLocks) return false;
    const { logger } = this.host.options;
    try {
      await this.host.releaseGrant(this.key, this.fence);
      return wasHeld;
    } catch (err) {
      const code = err instanceof DlockError ? err.code : undefined;
      const fields = { key: this.key, sessionId: this.sessionId, code, err };
      if (code === 'LOCK_LOST') logger.info(fields, 'release: lock already gone (benign)');
      else logger.warn(fields, 'release failed; the lease will expire on its own');
      return false;
    }
  }

  /** @internal The session ended or was lost: this lock goes with it. */
  loseWithSession(reason: LossReason, cause: DlockError): void {
    this.markLost(reason, cause, false);
  }

  private leaseExpired(): void {
    this.markLost('lock_deadline');
  }

  private markLost(reason: LossReason, cause?: DlockError, notifyHost = true): void {
    if (this.stateValue !== 'held') return;
    this.stateValue = 'lost';
    this.leaseTimer?.cancel();
    const error = this.makeError(`lock ${this.key} lost (${reason})`, reason, cause);
    this.lostError = error;
    this.host.forget(this);
    if (notifyHost) this.host.handleLost(this, reason, error);
    this.abort.abort(error);
    this.lostListeners.fire(error);
  }

  private makeError(message: string, reason: string, cause?: DlockError): LockLostError {
    return new LockLostError(message, {
      details: { key: this.key, reason, fencingToken: this.fencingToken.toString() },
      cause,
    });
  }

  private armLeaseTimer(): void {
    this.leaseTimer?.cancel();
    const { clock } = this.host.options;
    this.leaseTimer = clock.setTimer(() => {
      if (this.stateValue !== 'held') return;
      if (clock.nowMs() >= this.leaseDeadlineMs) this.leaseExpired();
      else this.armLeaseTimer();
    }, this.leaseDeadlineMs - clock.nowMs());
  }
}
