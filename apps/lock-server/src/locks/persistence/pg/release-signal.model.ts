/** What a release signal tells other replicas (pg-wakeups.loop.ts); none for a single process. */
export interface ReleaseAnnouncer {
  /** The first acquire of this process started waiting for `key`. */
  waiting(key: string): void;
  /** This process freed `keys` (released, revoked, session closed). */
  freed(keys: readonly string[]): void;
}

/**
 * Wake-ups for waiting acquires. A release, revoke or session close wakes the
 * longest-waiting acquire of that key (one, not all: waking every waiter only
 * to have all but one lose the race again is a thundering herd on the key's
 * row): made through THIS process directly, made through another replica by
 * its announcement (pg-wakeups.loop.ts). Lease expiry, and a woken waiter that lost
 * anyway, are caught by each waiter's poll (LOCK_WAIT_POLL_MS).
 */
export class ReleaseSignal {
  private readonly queues = new Map<string, (() => void)[]>();
  private announcer: ReleaseAnnouncer | null = null;

  announceTo(announcer: ReleaseAnnouncer): void {
    this.announcer = announcer;
  }

  /** Keys this process freed: its own waiters wake, and other replicas are told. */
  freed(keys: readonly string[]): void {
    this.wake(keys);
    this.announcer?.freed(keys);
  }

  /** Keys freed anywhere: the longest waiter of each here wakes. */
  wake(keys: Iterable<string>): void {
    for (const key of keys) {
      const queue = this.queues.get(key);
      const first = queue?.shift();
      if (queue && queue.length === 0) this.queues.delete(key);
      first?.();
    }
  }

  /** Resolves when this waiter's turn to be woken comes, or when `signal` aborts. */
  next(key: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const queue = this.queues.get(key);
        const at = queue?.indexOf(wake) ?? -1;
        if (queue && at >= 0) queue.splice(at, 1);
        if (queue && queue.length === 0) this.queues.delete(key);
        resolve();
      };
      const queue = this.queues.get(key) ?? [];
      queue.push(wake);
      this.queues.set(key, queue);
      this.announcer?.waiting(key);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
