import { Logger } from '@nestjs/common';
import type { Etcd3, Watcher } from 'etcd3';
import { startEtcd, waitFor, type EtcdCluster } from '@dlock/testing';
import type { AcquireRequest, AcquireResult } from '../../src/locks/persistence/lock-store.port';
import { EtcdGateway } from '../../src/locks/persistence/etcd/etcd.gateway';
import type { EtcdBackendSettings } from '../../src/locks/persistence/etcd/etcd.config';
import { EtcdLockStore } from '../../src/locks/persistence/etcd/etcd-lock.store';
import { EtcdSessionRegistry } from '../../src/locks/persistence/etcd/etcd-session.registry';
import { EtcdSessionWatch } from '../../src/locks/persistence/etcd/etcd-session-watch.loop';

/**
 * The etcd store's own bookkeeping (docs/lock-server-etcd.md): every acquire
 * takes a lease first, so one that is not granted must give it back, and a
 * reaped dead holder's lease goes with it; a renew of a stale token keeps no
 * lease alive; a waiting acquire wakes on the holder's session death or a
 * failed watch; the console lists no lock of a dead session. The session watch's tidy-up (revoking a dead
 * session's lock leases) is off here, so only the store acts.
 */
const PREFIX = 'dlock-store-leases/';

/** The session watch with its tidy-up off: it still tells waiters a session died. */
class NoticeOnlyWatch extends EtcdSessionWatch {
  /** Sessions someone asked to hear about. */
  readonly watched = new Set<string>();
  override releaseLocksOf(): Promise<number> {
    return Promise.resolve(0);
  }
  override onSessionGone(sessionId: string, fn: () => void): () => void {
    this.watched.add(sessionId);
    return super.onSessionGone(sessionId, fn);
  }
}

/** Whether `promise` settles within `ms` (a wait that hangs would otherwise last the lease's 30 s). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

describe('etcd store: leases given back, waiters woken', () => {
  let etcd: EtcdCluster;
  let gw: EtcdGateway;
  let watch: NoticeOnlyWatch;
  let store: EtcdLockStore;
  let sessions: EtcdSessionRegistry;
  let raw: Etcd3;

  const liveLeases = async () => (await raw.leaseClient.leaseLeases()).leases.length;
  const leaseAlive = async (id: string) =>
    Number((await raw.leaseClient.leaseTimeToLive({ ID: id })).TTL) > 0;
  const lockLease = async (key: string) =>
    (await raw.kv.range({ key: Buffer.from(`${PREFIX}lock/${key}`) })).kvs[0]?.lease;
  const killSession = async (sessionId: string) => {
    const kvs = (await raw.kv.range({ key: Buffer.from(`${PREFIX}session/${sessionId}`) })).kvs;
    await raw.leaseClient.leaseRevoke({ ID: kvs[0].lease });
  };
  const acquire = (key: string, sessionId: string, ownerId: string): Promise<AcquireResult> =>
    store.acquire({ key, sessionId, ownerId, ttlMillis: 30_000 } satisfies AcquireRequest);

  beforeAll(async () => {
    Logger.overrideLogger(false);
    etcd = await startEtcd({ label: 'store-leases' });
    const settings: EtcdBackendSettings = {
      endpoints: etcd.endpoints,
      keyPrefix: PREFIX,
      callTimeoutMs: 2_000,
      resendAfterMs: 250,
      opTimeoutMs: 1_500,
      readyTimeoutMs: 2_000,
      faultHandling: 'tuned',
      notLeaderRetryAfterMs: 1_000,
      sessionRetentionMs: 60_000,
    };
    gw = new EtcdGateway(settings);
    watch = new NoticeOnlyWatch(gw);
    watch.onModuleInit();
    store = new EtcdLockStore(gw, watch);
    sessions = new EtcdSessionRegistry(gw, watch);
    raw = gw.client;
  });
  afterAll(async () => {
    await watch?.onModuleDestroy();
    gw?.onApplicationShutdown();
    await etcd?.stop();
  });

  it('a contended acquire gives its lease back', async () => {
    const holder = await sessions.open('holder', 30_000);
    const other = await sessions.open('other', 30_000);
    expect((await acquire('leases:contended', holder.sessionId, 'holder')).kind).toBe('granted');
    const before = await liveLeases();
    for (let i = 0; i < 3; i++) {
      expect((await acquire('leases:contended', other.sessionId, 'other')).kind).toBe('contended');
    }
    await waitFor(async () => (await liveLeases()) === before, 5_000, 'the leases to go back');
  });

  it("reaping a dead holder revokes the dead grant's lease", async () => {
    const dead = await sessions.open('dead', 30_000);
    const next = await sessions.open('next', 30_000);
    expect((await acquire('leases:reap', dead.sessionId, 'dead')).kind).toBe('granted');
    const deadLease = await lockLease('leases:reap');
    await killSession(dead.sessionId);
    expect(await leaseAlive(deadLease)).toBe(true); // the tidy-up is off: the lock key's lease lives on
    expect((await acquire('leases:reap', next.sessionId, 'next')).kind).toBe('granted');
    await waitFor(async () => !(await leaseAlive(deadLease)), 5_000, 'the dead lease to go');
  });

  it("a revoke of a key whose holder's session died is NOT_FOUND, though the key lives on", async () => {
    const dead = await sessions.open('dead-r', 30_000);
    expect((await acquire('leases:revoke-dead', dead.sessionId, 'dead-r')).kind).toBe('granted');
    await killSession(dead.sessionId);
    expect(await lockLease('leases:revoke-dead')).toBeDefined();
    await expect(
      store.revoke({ key: 'leases:revoke-dead', operator: 'ops', reason: 'holder already dead' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it("a wait for release ends when the holder's session dies, though its key lives on", async () => {
    const holder = await sessions.open('holder-w', 30_000);
    expect((await acquire('leases:wait', holder.sessionId, 'holder-w')).kind).toBe('granted');
    let woken = false;
    const waiting = store
      .waitForRelease('leases:wait', new AbortController().signal)
      .then(() => (woken = true));
    await waitFor(
      () => Promise.resolve(watch.watched.has(holder.sessionId)),
      5_000,
      'the waiter to listen',
    );
    expect(woken).toBe(false);
    await killSession(holder.sessionId);
    await waiting;
    expect(await lockLease('leases:wait')).toBeDefined();
  });

  it("a renew of an older token keeps nothing alive, not even its session's newer grant", async () => {
    const holder = await sessions.open('holder-r', 30_000);
    const first = await acquire('leases:renew-old', holder.sessionId, 'holder-r');
    if (first.kind !== 'granted') throw new Error(`first acquire: ${first.kind}`);
    await store.release('leases:renew-old', first.grant.fencingToken, holder.sessionId);
    const second = await acquire('leases:renew-old', holder.sessionId, 'holder-r');
    if (second.kind !== 'granted') throw new Error(`second acquire: ${second.kind}`);
    const keepAlive = jest.spyOn(gw, 'keepAliveOnce');
    try {
      await expect(
        store.renew('leases:renew-old', holder.sessionId, first.grant.fencingToken),
      ).rejects.toMatchObject({ code: 'LOCK_LOST' });
      // The newer grant's lease runs out when its own renews stop, not when a stale one comes.
      expect(keepAlive).not.toHaveBeenCalled();
    } finally {
      keepAlive.mockRestore();
    }
  });

  it('a wait for release is not woken by the delete that came before the current holder', async () => {
    const holder = await sessions.open('holder-p', 30_000);
    const granted = await acquire('leases:past-delete', holder.sessionId, 'holder-p');
    expect(granted.kind).toBe('granted');
    // The key deleted and put back as the last two revisions: the wait reads at the put's, so a
    // watch started one revision early would see the delete of a holder already gone.
    const lockKey = Buffer.from(`${PREFIX}lock/leases:past-delete`);
    const [kv] = (await raw.kv.range({ key: lockKey })).kvs;
    await raw.kv.deleteRange({ key: lockKey });
    await raw.kv.put({ key: lockKey, value: kv.value });
    const abort = new AbortController();
    try {
      const waiting = store.waitForRelease('leases:past-delete', abort.signal);
      expect(await settlesWithin(waiting, 1_000)).toBe(false);
    } finally {
      abort.abort();
      await raw.kv.deleteRange({ key: lockKey });
    }
  });

  it('a wait for release ends when its watch fails, and a watch error after that is swallowed', async () => {
    const holder = await sessions.open('holder-e', 30_000);
    expect((await acquire('leases:watch-error', holder.sessionId, 'holder-e')).kind).toBe(
      'granted',
    );
    const watchers: Watcher[] = [];
    const watchKey = jest.spyOn(gw, 'watchKey').mockImplementation((key, startRevision) => {
      const watcher = EtcdGateway.prototype.watchKey.call(gw, key, startRevision);
      watchers.push(watcher);
      return watcher;
    });
    try {
      const waiting = settlesWithin(
        store.waitForRelease('leases:watch-error', new AbortController().signal),
        5_000,
      );
      await waitFor(() => Promise.resolve(watchers.length === 1), 5_000, 'the wait to watch');
      // An 'error' with no listener would throw out of emit (and crash the server).
      watchers[0].emit('error', new Error('watch stream broken'));
      expect(await waiting).toBe(true);
      expect(() => watchers[0].emit('error', new Error('late error'))).not.toThrow();
    } finally {
      watchKey.mockRestore();
    }
  });

  it("the console's list leaves out a lock whose holder's session died, though its key lives on", async () => {
    const dead = await sessions.open('dead-l', 30_000);
    const live = await sessions.open('live-l', 30_000);
    expect((await acquire('leases:list-dead', dead.sessionId, 'dead-l')).kind).toBe('granted');
    expect((await acquire('leases:list-live', live.sessionId, 'live-l')).kind).toBe('granted');
    await killSession(dead.sessionId);
    expect(await lockLease('leases:list-dead')).toBeDefined();
    const listed = (await store.listHeld(100)).items.map((lock) => lock.key);
    expect(listed.filter((key) => key.startsWith('leases:list-'))).toEqual(['leases:list-live']);
  });

  it('a wait for release ends at once for a free key and for an aborted caller, and on abort', async () => {
    const wait = (key: string, signal: AbortSignal) =>
      settlesWithin(store.waitForRelease(key, signal), 5_000);
    expect(await wait('leases:never-held', new AbortController().signal)).toBe(true);
    const holder = await sessions.open('holder-a', 30_000);
    expect((await acquire('leases:abort', holder.sessionId, 'holder-a')).kind).toBe('granted');
    expect(await wait('leases:abort', AbortSignal.abort())).toBe(true);
    // Aborted while the wait still reads the key: it must not then wait on.
    const during = new AbortController();
    const waiting = wait('leases:abort', during.signal);
    during.abort();
    expect(await waiting).toBe(true);
    // Aborted once the wait listens.
    const later = new AbortController();
    const listening = wait('leases:abort', later.signal);
    await waitFor(() => Promise.resolve(watch.watched.has(holder.sessionId)), 5_000, 'the wait');
    later.abort();
    expect(await listening).toBe(true);
  });
});
