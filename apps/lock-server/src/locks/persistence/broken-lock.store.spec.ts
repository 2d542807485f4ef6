import { EnvError } from '@dlock/config';
import { LockLostError, type FencingToken, type LockGrant } from '@dlock/lock-api';
import { testAuthEnv } from '@dlock/testing';
import { readLockServerConfig } from '../../config';
import { BrokenLockStore } from './broken-lock.store';
import {
  LockStore,
  type AcquireRequest,
  type AcquireResult,
  type HeldLock,
  type RevokeRequest,
} from './lock-store.port';

/** One key, the rules of docs/lock-server.md (enough to see what the broken modes change). */
class OneKeyStore extends LockStore {
  holder: HeldLock | null = null;
  private next = 10n;

  acquire(r: AcquireRequest): Promise<AcquireResult> {
    const h = this.holder;
    if (h && (h.ownerId !== r.ownerId || h.sessionId !== r.sessionId)) {
      return Promise.resolve({
        kind: 'contended',
        holderOwnerId: h.ownerId,
        expiresAt: h.expiresAt,
      });
    }
    const grant: LockGrant = h ?? {
      key: r.key,
      ownerId: r.ownerId,
      sessionId: r.sessionId,
      fencingToken: ++this.next,
      acquiredAt: new Date(0),
      expiresAt: new Date(6_000),
    };
    this.holder = grant;
    return Promise.resolve({ kind: 'granted', grant });
  }
  renew(_key: string, _s: string, token: FencingToken): Promise<LockGrant> {
    if (this.holder?.fencingToken !== token) return Promise.reject(new LockLostError('lost'));
    return Promise.resolve(this.holder);
  }
  release(_key: string, token: FencingToken): Promise<void> {
    if (this.holder?.fencingToken !== token) return Promise.reject(new LockLostError('lost'));
    this.holder = null;
    return Promise.resolve();
  }
  inspect(): Promise<{ seen: boolean; holder: HeldLock | null }> {
    return Promise.resolve({ seen: true, holder: this.holder });
  }
  revoke(r: RevokeRequest) {
    const h = this.holder;
    if (!h || (r.expectedToken !== undefined && r.expectedToken !== h.fencingToken)) {
      return Promise.reject(new LockLostError('not held'));
    }
    this.holder = null;
    return Promise.resolve({
      revokedToken: h.fencingToken,
      newTokenFloor: ++this.next,
      revocationId: 'r',
    });
  }
  waitForRelease(): Promise<void> {
    return Promise.resolve();
  }
  listHeld() {
    return Promise.resolve({ items: [], truncated: false });
  }
  ping(): Promise<void> {
    return Promise.resolve();
  }
}

const ask = (ownerId: string): AcquireRequest => ({
  key: 'k',
  ownerId,
  sessionId: `s-${ownerId}`,
  ttlMillis: 6_000,
});

const tokenOf = (r: AcquireResult) => (r.kind === 'granted' ? r.grant.fencingToken : null);

describe('BrokenLockStore: the negative controls of the linearizability checker', () => {
  it('release-ignores-token frees the live grant whatever token is presented', async () => {
    const store = new BrokenLockStore(new OneKeyStore(), 'release-ignores-token');
    const t = tokenOf(await store.acquire(ask('a')))!;
    await store.release('k', t - 5n, 's-a');
    expect(tokenOf(await store.acquire(ask('b')))).toBeGreaterThan(t);
  });

  it('acquire-ignores-holder takes a key another owner holds', async () => {
    const store = new BrokenLockStore(new OneKeyStore(), 'acquire-ignores-holder');
    const t = tokenOf(await store.acquire(ask('a')))!;
    const taken = await store.acquire(ask('b'));
    expect(taken.kind).toBe('granted');
    expect(tokenOf(taken)).toBeGreaterThan(t);
  });

  it('token-goes-back shows each new grant with a smaller token, and takes it back on renew and release', async () => {
    const store = new BrokenLockStore(new OneKeyStore(), 'token-goes-back');
    const t1 = tokenOf(await store.acquire(ask('a')))!;
    await store.renew('k', 's-a', t1);
    await store.release('k', t1, 's-a');
    const t2 = tokenOf(await store.acquire(ask('b')))!;
    expect(t2).toBeLessThan(t1);
    expect((await store.inspect('k')).holder?.fencingToken).toBe(t2);
  });

  it('without a broken mode the rules hold: a stale release is LOCK_LOST, a held key contended', async () => {
    const inner = new OneKeyStore();
    const t = tokenOf(await inner.acquire(ask('a')))!;
    await expect(inner.release('k', t - 5n)).rejects.toBeInstanceOf(LockLostError);
    expect((await inner.acquire(ask('b'))).kind).toBe('contended');
  });
});

describe('LOCK_SERVER_BROKEN is a harness-only switch', () => {
  const env = async () => ({
    ...(await testAuthEnv()),
    LOCKDB_URL: 'postgres://u:p@127.0.0.1:5432/lockdb',
  });

  it('is refused unless DLOCK_HARNESS=1', async () => {
    const base = await env();
    expect(() => readLockServerConfig({ ...base, LOCK_SERVER_BROKEN: 'token-goes-back' })).toThrow(
      EnvError,
    );
    expect(() =>
      readLockServerConfig({ ...base, LOCK_SERVER_BROKEN: 'token-goes-back', DLOCK_HARNESS: '1' }),
    ).not.toThrow();
  });

  it('is off by default and accepts only the named modes', async () => {
    const base = await env();
    expect(readLockServerConfig(base).LOCK_SERVER_BROKEN).toBe('off');
    expect(() =>
      readLockServerConfig({ ...base, LOCK_SERVER_BROKEN: 'sometimes', DLOCK_HARNESS: '1' }),
    ).toThrow(EnvError);
  });
});
