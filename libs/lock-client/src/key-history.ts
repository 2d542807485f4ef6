import type { FenceCredential, FencingToken } from '@dlock/lock-api';

/** A grant this session handed out and that has ended locally (released or lost). */
interface EndedGrant {
  token: FencingToken;
  /** Its lease deadline when it ended (monotonic ms): the server's lease ends no earlier. */
  leaseDeadlineMs: number;
}

/** Where a new handle's lease may start counting and the latest it may end. */
export interface LeaseBounds {
  fromMs: number;
  capMs: number;
}

/**
 * What one session has said to the lock-server about each key and does not know the
 * effect of yet (docs/lock-client.md, "Acquiring a key again on the same session").
 * The server answers a same-session acquire of a key it still holds with that same grant
 * and its old lease, and a release names nothing but the grant's token; so before a key
 * is acquired again, this is what says which old grant a late DELETE could still free,
 * and which answers may be an old grant whose lease started before the new send.
 */
export class KeyHistory {
  /** Releases sent whose effect no answer confirmed yet, by key. */
  private readonly releases = new Map<string, FenceCredential>();
  private readonly ended = new Map<string, EndedGrant>();
  /** The earliest send of an acquire whose outcome is unknown, by key. */
  private readonly acquiresSinceMs = new Map<string, number>();

  grantEnded(key: string, token: FencingToken, leaseDeadlineMs: number): void {
    this.ended.set(key, { token, leaseDeadlineMs });
  }

  releaseSent(key: string, fence: FenceCredential): void {
    this.releases.set(key, fence);
  }

  /** A 204 or a LOCK_LOST for this token: the grant is gone and cannot come back. */
  releaseConfirmed(key: string, token: FencingToken): void {
    if (this.releases.get(key)?.token === token) this.releases.delete(key);
    if (this.ended.get(key)?.token === token) this.ended.delete(key);
  }

  /** The grant of `key` a DELETE may still free: acquiring `key` waits until it is settled. */
  unresolvedRelease(key: string): FenceCredential | undefined {
    return this.releases.get(key);
  }

  acquireUnsettled(key: string, sentAtMs: number): void {
    this.acquiresSinceMs.set(key, Math.min(sentAtMs, this.acquiresSinceMs.get(key) ?? sentAtMs));
  }

  /**
   * The lease of a grant answered to an acquire sent at `sentAtMs`. A grant this session
   * already held keeps the deadline it had; after an acquire with no answer, the grant may
   * be that acquire's, so its lease counts from that earlier send.
   */
  leaseBounds(key: string, token: FencingToken, sentAtMs: number): LeaseBounds {
    const earlierMs = this.acquiresSinceMs.get(key) ?? sentAtMs;
    this.acquiresSinceMs.delete(key);
    const ended = this.ended.get(key);
    const capMs = ended?.token === token ? ended.leaseDeadlineMs : Number.POSITIVE_INFINITY;
    return { fromMs: Math.min(sentAtMs, earlierMs), capMs };
  }
}
