import { Inject, Injectable } from '@nestjs/common';
import { ContentionError } from '@dlock/lock-api';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';
import { SessionRegistry, type OwnerLoad } from '../../locks/persistence/lock-store.port';
import { ServerClock } from '../../locks/service/server-clock.service';

/** How long an owner's lock count read for an acquire is trusted, grants of this process added. */
const LOAD_FRESH_MS = 1_000;
/** Owners whose load this process remembers; beyond it the memo starts over (bounded memory). */
const OWNERS_REMEMBERED_MAX = 10_000;

/**
 * Per-owner caps on open sessions and held locks (docs/lock-server.md,
 * "Limits"), so one worker cannot fill the lock service, or the console's
 * panels, with its own. Opening a session reads the owner's load afresh (rare);
 * an acquire trusts a read up to LOAD_FRESH_MS old plus the grants this
 * process made since, so the hot path pays at most one read a second per
 * owner. The caps are checked before the write, not in it: concurrent
 * requests of one owner, or other replicas within that second, may overshoot
 * by the requests in flight.
 */
@Injectable()
export class OwnerCaps {
  private readonly loads = new Map<string, { load: OwnerLoad; readAtMs: number }>();
  /** Reads in flight: a burst of one owner's requests shares one read. */
  private readonly reading = new Map<string, Promise<OwnerLoad>>();

  constructor(
    private readonly registry: SessionRegistry,
    @Inject(LOCK_SERVER_CONFIG) private readonly config: LockServerConfig,
    private readonly clock: ServerClock,
  ) {}

  /** 429 CONTENTION_EXCEEDED when `owner` already has its cap of live sessions. */
  async checkOpen(owner: string): Promise<void> {
    const load = await this.read(owner);
    const max = this.config.LOCK_SESSIONS_PER_OWNER_MAX;
    if (load.sessions >= max) {
      throw this.refusal(`this identity already has ${max} open sessions`, {
        reason: 'sessions-per-owner',
        sessionsMax: max,
      });
    }
  }

  /** 429 CONTENTION_EXCEEDED when `owner` already holds its cap of locks. */
  async checkAcquire(owner: string): Promise<void> {
    const memo = this.loads.get(owner);
    const fresh = memo !== undefined && this.clock.monotonicMs() - memo.readAtMs < LOAD_FRESH_MS;
    const load = fresh ? memo.load : await this.read(owner);
    const max = this.config.LOCK_LOCKS_PER_OWNER_MAX;
    if (load.locks >= max) {
      throw this.refusal(`this identity already holds ${max} locks`, {
        reason: 'locks-per-owner',
        locksMax: max,
      });
    }
  }

  /** A session opened or a lock granted by this process: counted until the next read. */
  opened(owner: string): void {
    const memo = this.loads.get(owner);
    if (memo !== undefined) memo.load.sessions++;
  }

  granted(owner: string): void {
    const memo = this.loads.get(owner);
    if (memo !== undefined) memo.load.locks++;
  }

  /**
   * A lock of `owner` released: one fewer until the next read. Not a fresh read: an
   * acquire+release loop would pay one more statement per pair (bench/reports/lock-server-pg.md).
   */
  released(owner: string): void {
    const memo = this.loads.get(owner);
    if (memo !== undefined && memo.load.locks > 0) memo.load.locks--;
  }

  /** A session of `owner` closed, its locks with it: its next check reads afresh. */
  forget(owner: string): void {
    this.loads.delete(owner);
  }

  private read(owner: string): Promise<OwnerLoad> {
    let pending = this.reading.get(owner);
    if (pending === undefined) {
      pending = this.readOnce(owner).finally(() => this.reading.delete(owner));
      this.reading.set(owner, pending);
    }
    return pending;
  }

  private async readOnce(owner: string): Promise<OwnerLoad> {
    const load = await this.registry.loadOf(owner);
    if (this.loads.size >= OWNERS_REMEMBERED_MAX) this.loads.clear();
    this.loads.set(owner, { load: { ...load }, readAtMs: this.clock.monotonicMs() });
    return load;
  }

  private refusal(message: string, details: Record<string, unknown>): ContentionError {
    return new ContentionError(message, {
      retryAfterMillis: this.config.LOCK_CONTENTION_RETRY_AFTER_MS,
      details,
    });
  }
}
