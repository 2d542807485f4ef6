import type { FencingToken, LockGrant, LockOutcome } from '@dlock/lock-api';
import {
  LockStore,
  type AcquireRequest,
  type AcquireResult,
  type HeldLock,
  type ListedLock,
  type Listing,
  type RevokeRequest,
} from './lock-store.port';

/** The rules LOCK_SERVER_BROKEN can break (docs/harness.md, "Negative controls"). */
export const BROKEN_MODES = [
  'release-ignores-token',
  'acquire-ignores-holder',
  'token-goes-back',
] as const;
export type BrokenMode = (typeof BROKEN_MODES)[number];

/** token-goes-back reports BASE - token: every new grant shows a smaller token than the last. */
const TOKEN_BASE = 1n << 50n;

/**
 * A LockStore that breaks one rule of docs/lock-server.md on purpose, around
 * the real backend: the harness's negative controls for its linearizability
 * checker, which must reject what this store answers. Only ever built under
 * DLOCK_HARNESS=1 (config.ts refuses LOCK_SERVER_BROKEN otherwise).
 *
 * - release-ignores-token: a release frees whatever live grant the key has,
 *   whichever token it presents (no compare-and-delete).
 * - acquire-ignores-holder: an acquire that meets another owner's live grant
 *   takes the key anyway (the holder is evicted behind its back).
 * - token-goes-back: tokens are shown mirrored, so each new grant carries a
 *   smaller token than the one before; calls that present one are mapped back.
 */
export class BrokenLockStore extends LockStore {
  constructor(
    private readonly inner: LockStore,
    readonly mode: BrokenMode,
  ) {
    super();
    // The gauges stay absent when the real backend has none.
    const activity = inner.activity?.bind(inner);
    if (activity) this.activity = activity;
  }

  /** token-goes-back's view of a token, both ways (the mapping is its own inverse). */
  private shown(token: FencingToken): FencingToken {
    return this.mode === 'token-goes-back' ? TOKEN_BASE - token : token;
  }

  private shownGrant<T extends LockGrant | HeldLock>(g: T): T {
    return { ...g, fencingToken: this.shown(g.fencingToken) };
  }

  override async acquire(request: AcquireRequest): Promise<AcquireResult> {
    let result = await this.inner.acquire(request);
    if (result.kind === 'contended' && this.mode === 'acquire-ignores-holder') {
      const { holder } = await this.inner.inspect(request.key);
      if (holder) {
        await this.inner
          .revoke({
            key: request.key,
            operator: 'broken-lock-store',
            reason: 'LOCK_SERVER_BROKEN=acquire-ignores-holder',
            expectedToken: holder.fencingToken,
          })
          .catch(() => undefined);
      }
      result = await this.inner.acquire(request);
    }
    return result.kind === 'granted' ? { ...result, grant: this.shownGrant(result.grant) } : result;
  }

  override async renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis?: number,
  ): Promise<LockGrant> {
    return this.shownGrant(await this.inner.renew(key, sessionId, this.shown(token), ttlMillis));
  }

  override async release(key: string, token: FencingToken, sessionId: string): Promise<void> {
    if (this.mode === 'release-ignores-token') {
      const { holder } = await this.inner.inspect(key);
      if (holder) return this.inner.release(key, holder.fencingToken, sessionId);
    }
    return this.inner.release(key, this.shown(token), sessionId);
  }

  override async inspect(key: string): Promise<{ seen: boolean; holder: HeldLock | null }> {
    const r = await this.inner.inspect(key);
    return { ...r, holder: r.holder ? this.shownGrant(r.holder) : null };
  }

  override async revoke(request: RevokeRequest): Promise<LockOutcome> {
    const expectedToken =
      request.expectedToken === undefined ? undefined : this.shown(request.expectedToken);
    const r = await this.inner.revoke({ ...request, expectedToken });
    return {
      ...r,
      revokedToken: this.shown(r.revokedToken),
      newTokenFloor: this.shown(r.newTokenFloor),
    };
  }

  override waitForRelease(key: string, signal: AbortSignal): Promise<void> {
    return this.inner.waitForRelease(key, signal);
  }

  override async listHeld(limit: number): Promise<Listing<ListedLock>> {
    const r = await this.inner.listHeld(limit);
    return {
      ...r,
      items: r.items.map((l) => ({ ...l, fencingToken: this.shown(l.fencingToken) })),
    };
  }

  override ping(): Promise<void> {
    return this.inner.ping();
  }
}
