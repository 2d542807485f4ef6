import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DlockError, LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import { logLine } from './nest-logger';
import { LOCK_CLIENT_MODULE_OPTIONS, type LockClientModuleOptions } from './lock-client.options';

export interface WithLockOptions {
  /** Aborts the acquire (its attempts and backoff waits); the callback gets `handle.signal`. */
  signal?: AbortSignal;
  /** Lease TTL to ask for; defaults to the client's `lockTtlMs`. */
  ttlMs?: number;
  /**
   * Renews the lease every third of its TTL while `work` runs, for work that may outlast
   * ≈ 0.7 × the TTL (the lease ends locally a safety margin early). Off by default: a short
   * callback needs none. When a renew finds the lock lost, `handle.signal` aborts and the work
   * must stop (docs/extending.md, "4. Take a grant").
   */
  renew?: boolean;
}

/**
 * The process's one lock-server session (docs/extending.md): opened at boot
 * or at first use, kept alive by the SDK's heartbeat, opened again on the
 * next use after a loss, closed at shutdown (its locks released with it).
 * Without a session every caller gets a typed error: nothing runs grant-less.
 */
@Injectable()
export class LockSessionKeeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('lock-session');
  private current: LockSession | undefined;
  private opening: Promise<LockSession> | undefined;
  private closed = false;

  constructor(
    private readonly client: LockClient,
    @Inject(LOCK_CLIENT_MODULE_OPTIONS) private readonly options: LockClientModuleOptions,
  ) {}

  get isOpen(): boolean {
    return !this.closed && this.current?.state === 'open';
  }

  /**
   * The open session, opening one (one L1 try, within the SDK's call budget)
   * if there is none. Throws the SDK's typed error when the lock-server cannot
   * be reached, and UNAVAILABLE once the app is shutting down.
   */
  async session(signal?: AbortSignal): Promise<LockSession> {
    signal?.throwIfAborted();
    if (this.closed) throw shuttingDown();
    if (this.current?.state === 'open') return this.current;
    // Shared by concurrent callers, so it carries no caller's signal; the call budget bounds it.
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /**
   * Takes `key` under the SDK's bounded retry (a key still held at the end is
   * ContentionError), runs `work` with the handle, and releases on every path:
   * success, throw, or loss. Pass `handle.fencingToken` to every protected
   * write and `handle.signal` to every wait; it aborts when the lock is lost.
   */
  async withLock<T>(
    key: string,
    work: (handle: LockHandle) => Promise<T>,
    options: WithLockOptions = {},
  ): Promise<T> {
    const session = await this.session(options.signal);
    const handle = await session.acquire(key, { signal: options.signal, ttlMs: options.ttlMs });
    const done = new AbortController();
    const renewing = options.renew ? this.keepRenewing(handle, done.signal) : undefined;
    try {
      return await work(handle);
    } finally {
      done.abort();
      await renewing;
      // Never rejects; a release that fails leaves the lease to lapse on the server.
      await handle.release();
    }
  }

  /**
   * Renews `handle` every third of its TTL until `done` or the lock is lost. A renew that
   * answers LOCK_LOST marks the handle lost (its signal aborts); one that cannot reach the
   * lock-server is tried again next round, and the local deadline ends the lease if none lands.
   */
  private async keepRenewing(handle: LockHandle, done: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([done, handle.signal]);
    const everyMs = Math.max(1, Math.floor(handle.ttlMs / 3));
    while (!stop.aborted) {
      const slept = await sleep(everyMs, true, { signal: stop }).catch(() => false);
      if (!slept) return;
      await handle.renew({ signal: stop }).catch((err: unknown) => {
        if (!stop.aborted)
          this.logger.warn(
            logLine('renew failed; trying again', { key: handle.key, everyMs, err }),
          );
      });
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.openAtBootstrap) return;
    try {
      await this.session();
    } catch (err) {
      this.logger.warn(
        logLine('no lock-server session at boot; every lock waits until one opens', { err }),
      );
    }
  }

  /** L3 at shutdown (after `beforeApplicationShutdown` hooks drained the work). Never rejects. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  /** Closes the session; afterwards `session()` refuses. Idempotent, never rejects. */
  async close(): Promise<void> {
    this.closed = true;
    await this.opening?.catch(() => undefined);
    const session = this.current;
    this.current = undefined;
    await session?.close();
  }

  private async open(): Promise<LockSession> {
    const session = await this.client.openSession();
    if (this.closed) {
      // Shutdown began while the open was in flight: nobody would close this one.
      await session.close();
      throw shuttingDown();
    }
    this.current = session;
    this.logger.log(
      logLine('lock session opened', { sessionId: session.sessionId, ttlMs: session.ttlMs }),
    );
    return session;
  }
}

function shuttingDown(): DlockError {
  return new DlockError('UNAVAILABLE', 'shutting down: no new lock-server session', {
    details: { reason: 'shutting_down' },
  });
}
