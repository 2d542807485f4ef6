import { Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Watcher } from 'etcd3';
import { type EtcdGateway, listPrefix, rangeAt } from './etcd.gateway';

const CANCEL_WAIT_MS = 500;

/**
 * Follows session deaths decided by etcd (lease expiry deletes session/<sid>;
 * L3 revokes the lease). For each one it (1) wakes the waiters queued behind
 * that session's locks and (2) revokes the leases of the session's locks, so
 * their keys disappear too. (2) is tidying only: a lock whose session key is
 * gone already counts as free everywhere, so a lock-server that was down when
 * a session died loses nothing — the lock key then lives out its own TTL.
 */
export class EtcdSessionWatch implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('EtcdSessionWatch');
  private watcher: Watcher | null = null;
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(private readonly gw: EtcdGateway) {}

  onModuleInit(): void {
    const watcher = this.gw.watchPrefixDeletes(this.gw.keys.sessionsPrefix());
    watcher.on('delete', (kv) => this.sessionGone(this.gw.keys.sessionIdOf(kv.key)));
    watcher.on('error', (err) => this.logger.warn(`session watch error: ${String(err)}`));
    this.watcher = watcher;
  }

  async onModuleDestroy(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = null;
    if (!watcher) return;
    // Cancelling needs etcd to answer; shutdown must not hang on a dead cluster.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      watcher.cancel().catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Calls `fn` once if `sessionId` dies; returns the unsubscribe function. */
  onSessionGone(sessionId: string, fn: () => void): () => void {
    let set = this.listeners.get(sessionId);
    if (!set) {
      set = new Set();
      this.listeners.set(sessionId, set);
    }
    set.add(fn);
    return () => {
      const current = this.listeners.get(sessionId);
      current?.delete(fn);
      if (current?.size === 0) this.listeners.delete(sessionId);
    };
  }

  private sessionGone(sessionId: string): void {
    const set = this.listeners.get(sessionId);
    this.listeners.delete(sessionId);
    for (const fn of set ?? []) fn();
    void this.releaseLocksOf(sessionId);
  }

  /** Revokes the lease of every lock the session held (each lease belongs to one grant only). */
  async releaseLocksOf(sessionId: string): Promise<number> {
    try {
      const res = await this.gw.read(
        [listPrefix(this.gw.keys.sessionLocksPrefix(sessionId))],
        this.gw.deadline(),
      );
      const leases = new Set(rangeAt(res, 0).map((kv) => kv.lease));
      await Promise.all([...leases].map((id) => this.gw.revokeQuietly(id)));
      return leases.size;
    } catch (err) {
      this.logger.warn(`could not release the locks of a dead session yet: ${String(err)}`);
      return 0;
    }
  }
}
