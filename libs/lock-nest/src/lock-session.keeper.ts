import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DlockError, LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import { LOCK_CLIENT_MODULE_OPTIONS, type LockClientModuleOptions } from './lock-client.options';

export interface WithLockOptions {
  /** Aborts the acquire (its attempts and backoff waits); the callback gets `handle.signal`. */
  signal?: AbortSignal;
  /** Lease TTL to ask for; defaults to the client's `lockTtlMs`. */
  ttlMs?: number;
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
    try {
      return await work(handle);
    } finally {
      // Never rejects; a release that fails leaves the lease to lapse on the server.
      await handle.release();
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.openAtBootstrap) return;
    try {
      await this.session();
    } catch (err) {
      this.logger.warn(
        { code: err instanceof DlockError ? err.code : undefined, err: (err as Error).message },
        'no lock-server session at boot; every lock waits until one opens',
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
    this.logger.log({ sessionId: session.sessionId, ttlMs: session.ttlMs }, 'lock session opened');
    return session;
  }
}

function shuttingDown(): DlockError {
  return new DlockError('UNAVAILABLE', 'shutting down: no new lock-server session', {
    details: { reason: 'shutting_down' },
  });
}
