import assert from 'node:assert/strict';
import {
  DlockError,
  LOCK_KEY_PATTERN,
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  SessionLostError,
  ValidationError,
  WAIT_MAX_MS,
  type FenceCredential,
  type LockLostError,
} from '@dlock/lock-api';
import { sleepOn, type Timer } from './clock';
import { conservativeDeadlineMs, heartbeatTtlMs } from './deadline';
import { LockServerUnavailableError, ProtocolError } from './errors';
import { KeyHistory } from './key-history';
import { LockHandle, type HandleHost } from './lock-handle';
import { OnceListeners } from './listeners';
import {
  CALL_BUDGETS,
  HEARTBEAT_TRIES,
  ttl,
  type LossReason,
  type ResolvedOptions,
  type SessionLostFields,
} from './options';
import { retryAcquire } from './retry-policy';
import type { LockServerApi, OpenedSessionWire, ProvenGrant } from './wire';

export interface AcquireOptions {
  /** Lease TTL to request; defaults to the client's `lockTtlMs`. */
  ttlMs?: number;
  /** Server-side wait per attempt (L4 waitMillis, 0..30000); default 0. */
  waitMs?: number;
  /** Aborts the attempt in flight and the backoff wait. */
  signal?: AbortSignal;
}

export type SessionState = 'open' | 'lost' | 'closed';

/**
 * A lock-server session (L1–L3): heartbeats on its own timer every third of
 * its TTL and keeps a conservative local deadline. Every lock is acquired
 * through a session and dies with it. One per process is the intended use.
 */
export class LockSession implements HandleHost {
  readonly sessionId: string;
  readonly ownerId: string;
  /** TTL the server granted (may be lower than requested). */
  readonly ttlMs: number;

  private stateValue: SessionState = 'open';
  private deadlineMs: number;
  private serverGone = false;
  private heartbeatTimer: Timer | undefined;
  private deadlineTimer: Timer | undefined;
  private readonly handles = new Map<string, LockHandle>();
  private readonly pendingKeys = new Set<string>();
  private readonly history = new KeyHistory();
  private readonly abort = new AbortController();
  private readonly lostListeners: OnceListeners<SessionLostError>;
  private closing: Promise<void> | undefined;

  /** @internal Created by LockClient.openSession only. */
  constructor(
    readonly options: ResolvedOptions,
    readonly api: LockServerApi,
    opened: OpenedSessionWire,
    sentAtMs: number,
  ) {
    this.sessionId = opened.sessionId;
    this.ownerId = opened.ownerId;
    this.ttlMs = opened.ttlMillis;
    this.deadlineMs = conservativeDeadlineMs(sentAtMs, opened.ttlMillis, options.safetyMargin);
    this.lostListeners = new OnceListeners(options.logger, 'session.onLost');
    this.armDeadlineTimer();
    this.scheduleHeartbeat(sentAtMs + this.heartbeatIntervalMs);
  }

  get state(): SessionState {
    return this.stateValue;
  }

  /** Local monotonic deadline of the session (ms on the client's clock). */
  get deadline(): number {
    return this.deadlineMs;
  }

  /** Aborts when the session is lost or closed; the reason is a SessionLostError. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get serverMayHoldLocks(): boolean {
    return !this.serverGone;
  }

  /** Number of locks this session currently believes it holds. */
  get heldLockCount(): number {
    return this.handles.size;
  }

  remainingMs(): number {
    if (this.stateValue !== 'open') return 0;
    return Math.max(0, this.deadlineMs - this.options.clock.nowMs());
  }

  /** Fires once when the session is lost or closed. Returns an unsubscribe function. */
  onLost(listener: (error: SessionLostError) => void): () => void {
    return this.lostListeners.add(listener);
  }

  /**
   * One L4 attempt. Resolves to a handle, or null when another owner holds the
   * key (409 LOCK_CONTENDED). Every other failure throws its typed error.
   */
  async tryAcquire(key: string, options: AcquireOptions = {}): Promise<LockHandle | null> {
    return this.withKey(key, async () => {
      try {
        return await this.attempt(key, options);
      } catch (err) {
        if (err instanceof DlockError && err.code === 'LOCK_CONTENDED') return null;
        throw err;
      }
    });
  }

  /**
   * L4 under the fixed retry budget (retry-policy.ts): contention, NOT_LEADER
   * and connect failures are retried with full-jitter backoff; after the last
   * attempt a still-contended key throws ContentionError.
   */
  async acquire(key: string, options: AcquireOptions = {}): Promise<LockHandle> {
    return this.withKey(key, () =>
      retryAcquire(() => this.attempt(key, options), {
        random: this.options.random,
        sleep: (ms, signal) => sleepOn(this.options.clock, ms, signal),
        signal: options.signal,
      }),
    );
  }

  /**
   * L3 on shutdown: stops the heartbeat, tells every held lock it is lost
   * (reason session_closed), and asks the server to release them all. One
   * try; never rejects (the session expires on its own if the call fails).
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  // ---- HandleHost: called by this session's handles, not by applications --

  /** @internal */
  checkSessionDeadline(): void {
    if (this.stateValue === 'open' && this.options.clock.nowMs() >= this.deadlineMs)
      this.lose('session_deadline');
  }

  /** @internal */
  sessionLostByServer(error: DlockError): void {
    this.lose(error.code === 'SESSION_UNKNOWN' ? 'session_unknown' : 'session_expired', error);
  }

  /** @internal */
  handleLost(handle: LockHandle, reason: LossReason, _error: LockLostError): void {
    this.emitLost({
      reason,
      scope: 'lock',
      ownerId: this.ownerId,
      sessionId: this.sessionId,
      key: handle.key,
      lostLockCount: 1,
    });
  }

  /** @internal */
  forget(handle: LockHandle): void {
    if (this.handles.get(handle.key) === handle) this.handles.delete(handle.key);
    this.history.grantEnded(handle.key, handle.fencingToken, handle.leaseEndsAtMs);
  }

  /** @internal */
  async releaseGrant(key: string, fence: FenceCredential): Promise<void> {
    this.history.releaseSent(key, fence);
    try {
      await this.api.release(key, this.sessionId, fence, { budget: CALL_BUDGETS.release });
    } catch (err) {
      if (isLockLost(err)) this.history.releaseConfirmed(key, fence.token);
      throw err;
    }
    this.history.releaseConfirmed(key, fence.token);
  }

  // ---- internals --------------------------------------------------------

  private get heartbeatIntervalMs(): number {
    return Math.floor(this.ttlMs / 3);
  }

  private async withKey<T>(key: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    if (!LOCK_KEY_PATTERN.test(key))
      throw new ValidationError([{ field: 'key', message: 'must match [a-zA-Z0-9:._-]{1,128}' }]);
    // One live handle per key per session: two handles sharing one grant would
    // let one release what the other still believes it holds.
    if (this.handles.has(key) || this.pendingKeys.has(key))
      throw new Error(`lock-client: this session already holds or is acquiring ${key}`);
    this.pendingKeys.add(key);
    try {
      return await fn();
    } finally {
      this.pendingKeys.delete(key);
    }
  }

  private async attempt(key: string, options: AcquireOptions): Promise<LockHandle> {
    this.assertOpen();
    const ttlMs = ttl(
      'ttlMs',
      options.ttlMs ?? this.options.lockTtlMs,
      LOCK_TTL_MIN_MS,
      LOCK_TTL_MAX_MS,
    );
    const waitMs = ttl('waitMs', options.waitMs ?? 0, 0, WAIT_MAX_MS);
    await this.settleRelease(key, options.signal);
    const sentAtMs = this.options.clock.nowMs();
    let grant: ProvenGrant;
    try {
      grant = await this.api.acquire(
        key,
        { sessionId: this.sessionId, ttlMillis: ttlMs, waitMillis: waitMs },
        {
          // A server-side wait is part of the expected answer time.
          budget: {
            connectTimeoutMs: CALL_BUDGETS.acquire.connectTimeoutMs,
            readTimeoutMs: CALL_BUDGETS.acquire.readTimeoutMs + waitMs,
          },
          signal: options.signal,
        },
      );
    } catch (err) {
      if (outcomeUnknown(err)) this.history.acquireUnsettled(key, sentAtMs);
      this.failedOnServer(err);
      throw err;
    }
    assert.equal(grant.key, key, 'acquire answered for another key');
    assert.equal(grant.sessionId, this.sessionId, 'acquire answered for another session');
    // Lost or closed while the grant was in flight: the L3 that went out then
    // releases this lock too, and nobody would watch it here.
    this.assertOpen();
    const lease = this.history.leaseBounds(key, grant.fencingToken, sentAtMs);
    const handle = new LockHandle(this, grant, ttlMs, lease);
    this.handles.set(key, handle);
    return handle;
  }

  /**
   * A release of `key` with no answer yet may still reach the server. Acquired now, the key
   * would come back as that same grant (same session, still live), and the late DELETE would
   * free it under the new handle (docs/lock-client.md, "Acquiring a key again on the same
   * session"). One more DELETE of that grant settles it: a 204 or a LOCK_LOST both mean it is
   * gone, and the acquire that follows gets a new token no old DELETE can name.
   */
  private async settleRelease(key: string, signal: AbortSignal | undefined): Promise<void> {
    const fence = this.history.unresolvedRelease(key);
    if (fence === undefined) return;
    try {
      await this.api.release(key, this.sessionId, fence, { budget: CALL_BUDGETS.release, signal });
    } catch (err) {
      if (!isLockLost(err)) {
        this.failedOnServer(err);
        // No acquire went out, so the attempt may be made again (a connect-phase failure).
        if (err instanceof LockServerUnavailableError)
          throw new LockServerUnavailableError(
            'connect',
            `no acquire sent: the earlier release of ${key} is not settled`,
            err,
          );
        throw err;
      }
    }
    this.history.releaseConfirmed(key, fence.token);
  }

  /** A session code from the server ends the whole session. */
  private failedOnServer(err: unknown): void {
    if (
      err instanceof DlockError &&
      (err.code === 'SESSION_EXPIRED' || err.code === 'SESSION_UNKNOWN')
    )
      this.sessionLostByServer(err);
  }

  private assertOpen(): void {
    this.checkSessionDeadline();
    if (this.stateValue === 'open') return;
    throw new SessionLostError(
      'SESSION_EXPIRED',
      `session ${this.sessionId} is ${this.stateValue}`,
      {
        details: { sessionId: this.sessionId, state: this.stateValue },
      },
    );
  }

  private lose(reason: LossReason, cause?: DlockError): void {
    if (this.stateValue !== 'open') return;
    this.stateValue = 'lost';
    if (reason === 'session_expired' || reason === 'session_unknown') this.serverGone = true;
    const error = this.endSession(reason, cause);
    this.emitLost({
      reason,
      scope: 'session',
      ownerId: this.ownerId,
      sessionId: this.sessionId,
      lostLockCount: error.lostLockCount,
    });
    this.lostListeners.fire(error.error);
    // The server may keep our locks for up to the margin longer; free them now if it is reachable.
    if (!this.serverGone) void this.sendClose();
  }

  private async doClose(): Promise<void> {
    const wasOpen = this.stateValue === 'open';
    this.stateValue = 'closed';
    if (wasOpen) {
      const ended = this.endSession('session_closed');
      if (ended.lostLockCount > 0)
        this.emitLost({
          reason: 'session_closed',
          scope: 'session',
          ownerId: this.ownerId,
          sessionId: this.sessionId,
          lostLockCount: ended.lostLockCount,
        });
      this.lostListeners.fire(ended.error);
    }
    if (!this.serverGone) await this.sendClose();
  }

  /** Stops the timers, aborts the session signal and tells every held lock it is gone. */
  private endSession(
    reason: LossReason,
    cause?: DlockError,
  ): { error: SessionLostError; lostLockCount: number } {
    this.heartbeatTimer?.cancel();
    this.deadlineTimer?.cancel();
    const code = reason === 'session_unknown' ? 'SESSION_UNKNOWN' : 'SESSION_EXPIRED';
    const error = new SessionLostError(code, `session ${this.sessionId} lost (${reason})`, {
      details: { sessionId: this.sessionId, reason },
      cause,
    });
    const held = [...this.handles.values()];
    this.handles.clear();
    for (const handle of held) handle.loseWithSession(reason, error);
    this.abort.abort(error);
    return { error, lostLockCount: held.length };
  }

  private async sendClose(): Promise<void> {
    this.serverGone = true;
    try {
      await this.api.closeSession(this.sessionId, { budget: CALL_BUDGETS.session });
    } catch (err) {
      const code = err instanceof DlockError ? err.code : undefined;
      const benign = code === 'SESSION_UNKNOWN' || code === 'SESSION_EXPIRED';
      this.options.logger[benign ? 'debug' : 'warn'](
        { sessionId: this.sessionId, code, err },
        'session close not confirmed; the server expires it on its own',
      );
    }
  }

  private emitLost(fields: SessionLostFields): void {
    this.options.logger.warn({ event: 'session_lost', ...fields }, 'lock-client: lost');
    try {
      this.options.events?.onSafetyEvent('session_lost', fields);
    } catch (err) {
      this.options.logger.error({ err }, 'lock-client onSafetyEvent hook threw');
    }
  }

  private armDeadlineTimer(): void {
    this.deadlineTimer?.cancel();
    const { clock } = this.options;
    this.deadlineTimer = clock.setTimer(() => {
      if (this.stateValue !== 'open') return;
      if (clock.nowMs() >= this.deadlineMs) this.lose('session_deadline');
      else this.armDeadlineTimer();
    }, this.deadlineMs - clock.nowMs());
  }

  private scheduleHeartbeat(atMs: number): void {
    const { clock } = this.options;
    this.heartbeatTimer = clock.setTimer(
      () => void this.heartbeatRound(atMs),
      atMs - clock.nowMs(),
    );
  }

  /**
   * One heartbeat round (L2): up to HEARTBEAT_TRIES tries, all inside one
   * interval, each with the docs/contract.md heartbeat budget trimmed to what is left
   * of the round. Never throws; a round that gets nothing through leaves the
   * deadline where it was, and the deadline timer does the rest.
   */
  private async heartbeatRound(roundStartMs: number): Promise<void> {
    const { clock, safetyMargin, logger } = this.options;
    // A timer that fired late (busy event loop) still gets a full round.
    const roundEndMs = Math.max(roundStartMs, clock.nowMs()) + this.heartbeatIntervalMs;
    for (let tryIndex = 0; tryIndex < HEARTBEAT_TRIES && this.stateValue === 'open'; tryIndex++) {
      const sentAtMs = clock.nowMs();
      const leftMs = Math.floor(roundEndMs - sentAtMs);
      if (leftMs <= 0) break;
      try {
        const beat = await this.api.heartbeat(this.sessionId, {
          budget: {
            connectTimeoutMs: Math.min(CALL_BUDGETS.heartbeat.connectTimeoutMs, leftMs),
            readTimeoutMs: Math.min(CALL_BUDGETS.heartbeat.readTimeoutMs, leftMs),
          },
          signal: this.abort.signal,
        });
        if (this.stateValue !== 'open') return;
        const extendedMs = conservativeDeadlineMs(
          sentAtMs,
          heartbeatTtlMs(this.ttlMs, beat.expiresAt, beat.serverTime),
          safetyMargin,
        );
        this.deadlineMs = Math.max(this.deadlineMs, extendedMs);
        this.armDeadlineTimer();
        break;
      } catch (err) {
        if (this.stateValue !== 'open') return;
        if (
          err instanceof DlockError &&
          (err.code === 'SESSION_EXPIRED' || err.code === 'SESSION_UNKNOWN')
        ) {
          this.sessionLostByServer(err);
          return;
        }
        logger.warn(
          {
            sessionId: this.sessionId,
            tryIndex,
            code: err instanceof DlockError ? err.code : undefined,
            err,
          },
          'heartbeat failed',
        );
      }
    }
    if (this.stateValue === 'open') this.scheduleHeartbeat(roundEndMs);
  }
}

function isLockLost(err: unknown): boolean {
  return err instanceof DlockError && err.code === 'LOCK_LOST';
}

/**
 * True when the lock-server may have granted an acquire that failed: no answer in time, a
 * 2xx that broke the contract, or an abort after the request left. An error envelope or a
 * connection never made says nothing was granted.
 */
function outcomeUnknown(err: unknown): boolean {
  if (err instanceof LockServerUnavailableError) return err.phase === 'response';
  return !(err instanceof DlockError) || err instanceof ProtocolError;
}
