import { Logger } from '@nestjs/common';
import { LockLostError } from '@dlock/lock-api';
import type { Etcd3, ICompare, IKeyValue, IRequestOp, ITxnResponse } from 'etcd3';
import { startEtcd, type EtcdCluster } from '@dlock/testing';
import type { AcquireResult } from '../../src/locks/persistence/lock-store.port';
import { EtcdGateway, type Deadline } from '../../src/locks/persistence/etcd/etcd.gateway';
import type { EtcdBackendSettings } from '../../src/locks/persistence/etcd/etcd.config';
import { EtcdLockStore } from '../../src/locks/persistence/etcd/etcd-lock.store';
import { EtcdSessionRegistry } from '../../src/locks/persistence/etcd/etcd-session.registry';
import { EtcdSessionWatch } from '../../src/locks/persistence/etcd/etcd-session-watch.loop';

/**
 * Issue 20: every delete of a lock key must name the incarnation it means to
 * remove (docs/contract.md: token = create revision = mod revision at grant), or
 * a late delete removes a newer holder's key and two grants overlap. Two
 * stores on their own etcd clients stand for two lock-server replicas; the
 * session watch's tidy-up is off (onModuleInit never runs), so only the
 * store's own deletes act. Races are forced with gates, never with sleeps.
 */
const PREFIX = 'dlock-delete-races/';

/** A call held until the test opens the gate; `reached` resolves when one is held. */
class Gate {
  private open!: () => void;
  private readonly opened = new Promise<void>((r) => (this.open = r));
  private arrived!: () => void;
  readonly reached = new Promise<void>((r) => (this.arrived = r));
  async pass(): Promise<void> {
    this.arrived();
    await this.opened;
  }
  release(): void {
    this.open();
  }
}

/** The gateway of one replica, with hooks that delay or disturb chosen etcd calls. */
class HookedGateway extends EtcdGateway {
  holdTxn: ((compare: ICompare[], success: IRequestOp[]) => Gate | null) | null = null;
  loseAnswer: ((compare: ICompare[], success: IRequestOp[]) => boolean) | null = null;
  revokeGate: Gate | null = null;
  /** Runs before a keep-alive reaches etcd (the lease may be made to lapse here). */
  beforeKeepAlive: ((leaseId: string) => Promise<void>) | null = null;
  readonly pendingRevokes: Array<Promise<unknown>> = [];
  /** Lease revokes this gateway sent. */
  revokes = 0;
  /** Reads at a past revision this gateway sent (a release's session read when not in its txn). */
  readsAt = 0;

  override getAt(
    key: Buffer,
    revision: string,
    deadline: Deadline,
  ): Promise<IKeyValue | undefined> {
    this.readsAt += 1;
    return super.getAt(key, revision, deadline);
  }

  override async keepAliveOnce(leaseId: string, deadline: Deadline): Promise<number> {
    const hook = this.beforeKeepAlive;
    this.beforeKeepAlive = null;
    await hook?.(leaseId);
    return super.keepAliveOnce(leaseId, deadline);
  }

  override async txn(
    compare: ICompare[],
    success: IRequestOp[],
    failure: IRequestOp[],
    deadline: Deadline,
  ): Promise<ITxnResponse> {
    const gate = this.holdTxn?.(compare, success);
    if (gate) {
      this.holdTxn = null;
      await gate.pass();
      deadline = this.deadline();
    }
    const res = await super.txn(compare, success, failure, deadline);
    if (this.loseAnswer?.(compare, success)) {
      // Committed (or, re-sent, refused), but the caller never hears so: a
      // deadline after the commit, on every attempt until the test says stop.
      throw this.unavailable(new Error('4 DEADLINE_EXCEEDED: simulated lost answer'));
    }
    return res;
  }

  override revoke(leaseId: string, deadline: Deadline): Promise<boolean> {
    this.revokes += 1;
    const gate = this.revokeGate;
    const done = (async () => {
      await gate?.pass();
      return super.revoke(leaseId, gate ? this.deadline() : deadline);
    })();
    this.pendingRevokes.push(done.catch(() => undefined));
    return done;
  }
}

/** A reap: deletes the lock key on condition that some session key is gone. */
const isReapOf = (lockKey: Buffer) => (compare: ICompare[], success: IRequestOp[]) =>
  compare.some((c) => c.target === 'Create' && String(c.key).startsWith(`${PREFIX}session/`)) &&
  success.some((op) => op.request_delete_range?.key?.equals(lockKey) === true);

const isCreateOf = (lockKey: Buffer) => (compare: ICompare[]) =>
  compare.some(
    (c) =>
      c.target === 'Create' &&
      c.result === 'Equal' &&
      lockKey.equals(Buffer.from(c.key ?? '')) &&
      String(c.create_revision) === '0',
  );

interface Replica {
  gw: HookedGateway;
  store: EtcdLockStore;
  sessions: EtcdSessionRegistry;
}

describe('etcd: a late delete never removes a newer grant (issue 20)', () => {
  let etcd: EtcdCluster;
  let a: Replica;
  let b: Replica;
  let raw: Etcd3;

  const replica = (): Replica => {
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
    const gw = new HookedGateway(settings);
    const watch = new EtcdSessionWatch(gw); // never started: no tidy-up, only the store deletes
    return {
      gw,
      store: new EtcdLockStore(gw, watch),
      sessions: new EtcdSessionRegistry(gw, watch),
    };
  };

  const lockKey = (key: string) => Buffer.from(`${PREFIX}lock/${key}`);
  const lockKv = async (key: string) => (await raw.kv.range({ key: lockKey(key) })).kvs[0];
  const tokenOf = (r: AcquireResult) => (r.kind === 'granted' ? r.grant.fencingToken : null);

  /** A new session of `owner` on replica `r`, granted `key`: its session id and token. */
  const holdKey = async (r: Replica, key: string, owner: string) => {
    const { sessionId } = await r.sessions.open(owner, 30_000);
    const granted = await r.store.acquire({ key, sessionId, ownerId: owner, ttlMillis: 30_000 });
    return { sessionId, token: tokenOf(granted) };
  };

  /** Ends a session as its lease expiry would: the session key goes, its locks stay behind. */
  const killSession = async (sessionId: string) => {
    const kvs = (await raw.kv.range({ key: Buffer.from(`${PREFIX}session/${sessionId}`) })).kvs;
    await raw.leaseClient.leaseRevoke({ ID: kvs[0].lease });
  };

  /** Holders as every replica sees them: exactly the expected one, or none. */
  const expectHolder = async (key: string, sessionId: string | null, token?: bigint) => {
    for (const r of [a, b]) {
      const { holder } = await r.store.inspect(key);
      expect(holder && { sessionId: holder.sessionId, token: holder.fencingToken }).toEqual(
        sessionId === null ? null : { sessionId, token },
      );
    }
  };

  beforeAll(async () => {
    Logger.overrideLogger(false); // the gateways' debug lines; the lost answer is expected
    etcd = await startEtcd({ label: 'delete-races' });
    a = replica();
    b = replica();
    raw = a.gw.client;
  });
  afterAll(async () => {
    a?.gw.onApplicationShutdown();
    b?.gw.onApplicationShutdown();
    await etcd?.stop();
  });

  it('two replicas reap one dead holder: the late reap leaves the new holder alone', async () => {
    const key = 'race:reap';
    const { sessionId: deadSession, token: oldToken } = await holdKey(a, key, 'owner-dead');
    expect(oldToken).not.toBeNull();
    await killSession(deadSession);
    // The dead holder's key is still there (its own lease runs 30 s), but nobody holds it.
    expect((await lockKv(key))?.create_revision).toBe(String(oldToken));
    await expectHolder(key, null);

    const n = await a.sessions.open('owner-n', 30_000);
    const m = await b.sessions.open('owner-m', 30_000);
    // Replica B reads the dead holder and is held just before its reap txn.
    const bReap = new Gate();
    b.gw.holdTxn = (compare, success) => (isReapOf(lockKey(key))(compare, success) ? bReap : null);
    const bAcquire = b.store.acquire({
      key,
      sessionId: m.sessionId,
      ownerId: 'owner-m',
      ttlMillis: 30_000,
    });
    await bReap.reached;

    // Replica A reaps the same dead holder and grants the key to N.
    const granted = await a.store.acquire({
      key,
      sessionId: n.sessionId,
      ownerId: 'owner-n',
      ttlMillis: 30_000,
    });
    const newToken = tokenOf(granted);
    expect(newToken).not.toBeNull();
    expect(newToken! > oldToken!).toBe(true);
    await expectHolder(key, n.sessionId, newToken!);

    // B's reap now runs on its stale view of the dead holder: it must match nothing.
    bReap.release();
    const bResult = await bAcquire;
    expect(bResult).toEqual({
      kind: 'contended',
      holderOwnerId: 'owner-n',
      expiresAt: expect.any(Date),
    });
    expect((await lockKv(key))?.create_revision).toBe(String(newToken));
    await expectHolder(key, n.sessionId, newToken!);
    // N's grant is intact: it renews on either replica and releases cleanly.
    const renewed = await b.store.renew(key, n.sessionId, newToken!);
    expect(renewed.fencingToken).toBe(newToken);
    await a.store.release(key, newToken!, n.sessionId);
    await expectHolder(key, null);
  });

  it('an acquire whose answer was lost never revokes the grant its retry was handed', async () => {
    const key = 'race:lost-answer';
    const s = await a.sessions.open('owner-s', 30_000);
    const other = await b.sessions.open('owner-o', 30_000);
    const req = { key, sessionId: s.sessionId, ownerId: 'owner-s', ttlMillis: 30_000 };

    // The creating txn commits but its answer is lost; any lease clean-up is held back.
    a.gw.loseAnswer = isCreateOf(lockKey(key));
    const revokes = new Gate();
    a.gw.revokeGate = revokes;
    await expect(a.store.acquire(req)).rejects.toMatchObject({ code: 'NOT_LEADER' });

    // The client retries (docs/lock-server.md): it is handed the grant that did commit.
    a.gw.loseAnswer = null;
    const retried = await a.store.acquire(req);
    const token = tokenOf(retried);
    expect(token).not.toBeNull();
    expect((await lockKv(key))?.create_revision).toBe(String(token));

    // Whatever clean-up the lost attempt queued now reaches etcd.
    a.gw.revokeGate = null;
    revokes.release();
    await Promise.all(a.gw.pendingRevokes);

    // The retried grant still holds the key: no one else is granted it.
    expect((await lockKv(key))?.create_revision).toBe(String(token));
    await expectHolder(key, s.sessionId, token!);
    const contender = await b.store.acquire({
      key,
      sessionId: other.sessionId,
      ownerId: 'owner-o',
      ttlMillis: 30_000,
    });
    expect(contender).toMatchObject({ kind: 'contended', holderOwnerId: 'owner-s' });
    await a.store.release(key, token!, s.sessionId);
  });

  it('a release after the session died is LOCK_LOST even while the dead key is still there', async () => {
    const key = 'race:release-dead';
    const { sessionId, token } = await holdKey(a, key, 'owner-r');
    await killSession(sessionId);
    expect((await lockKv(key))?.create_revision).toBe(String(token));
    await expect(b.store.release(key, token!, sessionId)).rejects.toBeInstanceOf(LockLostError);
    await expectHolder(key, null);
  });

  it("a release is one txn: the proof's session read in it, the grant's lease left empty", async () => {
    const key = 'race:release-one-txn';
    const { sessionId, token } = await holdKey(a, key, 'owner-1');
    const lease = (await lockKv(key)).lease;
    a.gw.readsAt = 0;
    a.gw.revokes = 0;
    await a.store.release(key, token!, sessionId);
    expect(a.gw.readsAt).toBe(0);
    expect(a.gw.revokes).toBe(0);
    await expectHolder(key, null);
    // The session holds nothing at once, and the lease left to its TTL carries no key.
    const index = await raw.kv.range({
      key: Buffer.from(`${PREFIX}session-lock/${sessionId}/`),
      range_end: Buffer.from(`${PREFIX}session-lock/${sessionId}0`),
    });
    expect(index.kvs).toEqual([]);
    const left = await raw.leaseClient.leaseTimeToLive({ ID: lease, keys: true });
    expect(Number(left.TTL)).toBeGreaterThan(0);
    expect(left.keys).toEqual([]);
    // Nothing can be put on it again: a renew of the released token is LOCK_LOST.
    await expect(a.store.renew(key, sessionId, token!)).rejects.toBeInstanceOf(LockLostError);
    expect((await raw.leaseClient.leaseTimeToLive({ ID: lease, keys: true })).keys).toEqual([]);
  });

  it("a release naming another session judges by the holder's session at the delete's revision", async () => {
    const alive = await holdKey(a, 'race:release-other-alive', 'owner-2');
    const stranger = await b.sessions.open('owner-x', 30_000);
    a.gw.readsAt = 0;
    await a.store.release('race:release-other-alive', alive.token!, stranger.sessionId);
    expect(a.gw.readsAt).toBe(1);
    await expectHolder('race:release-other-alive', null);

    const dead = await holdKey(a, 'race:release-other-dead', 'owner-3');
    await killSession(dead.sessionId);
    await expect(
      a.store.release('race:release-other-dead', dead.token!, stranger.sessionId),
    ).rejects.toBeInstanceOf(LockLostError);
    await expectHolder('race:release-other-dead', null);
  });

  it('a renew whose lease lapses between its check and its keep-alive is LOCK_LOST and records nothing', async () => {
    const key = 'race:renew-lapsed';
    const { sessionId, token } = await holdKey(a, key, 'owner-l');
    // The lease ends (as its TTL running out would) after the renew read the live key.
    a.gw.beforeKeepAlive = async (leaseId) => {
      await raw.leaseClient.leaseRevoke({ ID: leaseId });
    };
    await expect(a.store.renew(key, sessionId, token!)).rejects.toMatchObject({
      code: 'LOCK_LOST',
      details: { storedToken: String(token) },
    });
    expect(a.gw.beforeKeepAlive).toBeNull();
    expect(await lockKv(key)).toBeUndefined();
    // No lease-less index entry claims the key for the session.
    const index = await raw.kv.range({
      key: Buffer.from(`${PREFIX}session-lock/`),
      range_end: Buffer.from(`${PREFIX}session-lock0`),
    });
    expect(index.kvs.filter((kv) => String(kv.key).endsWith(key))).toEqual([]);
    await expectHolder(key, null);
  });

  /** The session's index entry for `key`: where the store records the expiry it reports. */
  const indexOf = async (sessionId: string, key: string) =>
    (await raw.kv.range({ key: Buffer.from(`${PREFIX}session-lock/${sessionId}/${key}`) })).kvs[0];

  it('a renew whose grant changes hands after its keep-alive is LOCK_LOST with the new token, and records nothing', async () => {
    const key = 'race:renew-handover';
    const { sessionId, token } = await holdKey(a, key, 'owner-h');
    // The renew's record (a put of the index entry on the grant's token) is held
    // while the grant is released and the key granted to another session.
    const gate = new Gate();
    a.gw.holdTxn = (compare, success) =>
      success.some((op) => op.request_put?.key?.toString().startsWith(`${PREFIX}session-lock/`))
        ? gate
        : null;
    const renewed = a.store.renew(key, sessionId, token!);
    renewed.catch(() => undefined); // judged below, once the gate is through
    await gate.reached;
    await b.store.release(key, token!, sessionId);
    const next = await holdKey(b, key, 'owner-n');
    gate.release();
    await expect(renewed).rejects.toMatchObject({
      code: 'LOCK_LOST',
      details: { storedToken: String(next.token) },
    });
    expect(await indexOf(sessionId, key)).toBeUndefined();
    await expectHolder(key, next.sessionId, next.token!);
  });

  it('a renew moves the expiry every replica reports to a full lease from the renew', async () => {
    const key = 'race:renew-expiry';
    const { sessionId, token } = await holdKey(a, key, 'owner-e');
    // The recorded expiry is made nearly due, as it would be late in the lease.
    const entry = await indexOf(sessionId, key);
    const dueSoonMs = Date.now() + 1_000;
    await raw.kv.put({
      key: entry.key,
      value: Buffer.from(JSON.stringify({ expiresAtMs: dueSoonMs })),
      lease: entry.lease,
    });
    const renewedFrom = Date.now();
    const grant = await a.store.renew(key, sessionId, token!);
    expect(grant.expiresAt.getTime()).toBeGreaterThanOrEqual(renewedFrom + 29_000);
    for (const r of [a, b]) {
      const { holder } = await r.store.inspect(key);
      expect(holder?.expiresAt.getTime()).toBe(grant.expiresAt.getTime());
    }
  });

  /**
   * W acquires `key` on replica B, and each of its first `times` txns that `match` is held
   * while `between(n)` runs on replica A (n = 1..times). The answer is left to the caller.
   */
  const acquireHeldAtEach = async (
    key: string,
    match: (compare: ICompare[], success: IRequestOp[]) => boolean,
    times: number,
    between: (n: number) => Promise<void>,
  ) => {
    const w = await b.sessions.open('owner-w', 30_000);
    let gate = new Gate();
    const hold = (compare: ICompare[], success: IRequestOp[]) =>
      match(compare, success) ? gate : null;
    b.gw.holdTxn = hold;
    const answer = b.store.acquire({
      key,
      sessionId: w.sessionId,
      ownerId: 'owner-w',
      ttlMillis: 30_000,
    });
    answer.catch(() => undefined); // judged by the caller once the gates are through
    for (let n = 1; n <= times; n++) {
      await gate.reached;
      await between(n);
      const held = gate;
      if (n < times) {
        gate = new Gate();
        b.gw.holdTxn = hold; // a gate is used once: the hook clears itself
      }
      held.release();
    }
    return { answer };
  };

  // An acquire looks at the holder it found at most ACQUIRE_ATTEMPTS_MAX (4) times. A key that
  // passes to a new owner before each look is answered as contended, naming the last holder seen
  // and free to retry now: no grant, no token, no unbounded loop.
  it('a key that changes hands before every look is contended, naming the last holder seen, retry now', async () => {
    const key = 'race:hands';
    let current = await holdKey(a, key, 'owner-0');
    const started = Date.now();
    const { answer } = await acquireHeldAtEach(key, isReapOf(lockKey(key)), 4, async (n) => {
      await a.store.release(key, current.token!, current.sessionId);
      current = await holdKey(a, key, `owner-${n}`);
    });
    const result = await answer;
    expect(result).toEqual({
      kind: 'contended',
      holderOwnerId: 'owner-3',
      expiresAt: expect.any(Date),
    });
    // Not the new holder's lease end (30 s away): the key is worth trying again at once.
    const expiresAtMs = (result as { expiresAt: Date }).expiresAt.getTime();
    expect(expiresAtMs).toBeGreaterThanOrEqual(started);
    expect(expiresAtMs).toBeLessThanOrEqual(Date.now());
    await expectHolder(key, current.sessionId, current.token!);
    await a.store.release(key, current.token!, current.sessionId);
  });

  // The other way the looks run out: before each create, a new holder takes the key and its
  // session dies, so every look reaps a dead holder and finds the key taken again next time.
  // Nothing was granted and no live holder was seen: NOT_LEADER, retry (fail closed).
  it('a key retaken by a dead holder before every create is NOT_LEADER, with nothing granted', async () => {
    const key = 'race:reaped';
    const { answer } = await acquireHeldAtEach(key, isCreateOf(lockKey(key)), 4, async (n) => {
      await killSession((await holdKey(a, key, `owner-dead-${n}`)).sessionId);
    });
    await expect(answer).rejects.toMatchObject({
      code: 'NOT_LEADER',
      message: 'the lock changed hands repeatedly; retry',
      retryAfterMillis: 1_000,
    });
    // The last look reaped the last dead holder: nobody holds the key, and W was granted nothing.
    await expectHolder(key, null);
  });

  /** A's next txn that `match`es is held at a gate; `between` runs on replica B meanwhile. */
  const heldOnce = async (
    match: (compare: ICompare[], success: IRequestOp[]) => boolean,
    between: () => Promise<void>,
  ) => {
    const gate = new Gate();
    a.gw.holdTxn = (compare, success) => (match(compare, success) ? gate : null);
    return {
      pass: async () => {
        await gate.reached;
        await between();
        gate.release();
      },
    };
  };
  const readsSession = (compare: ICompare[], success: IRequestOp[]) =>
    compare.length === 0 &&
    success.some((op) => op.request_range?.key?.toString().startsWith(`${PREFIX}session/`));
  const isRevokeDelete = (_compare: ICompare[], success: IRequestOp[]) =>
    success.some((op) => op.request_put?.key?.toString().startsWith(`${PREFIX}revocation/`));
  /** The holder `current` releases and a new session of `owner` takes the key, on replica B. */
  const handOver = async (
    key: string,
    current: { sessionId: string; token: bigint | null },
    owner: string,
  ) => {
    await b.store.release(key, current.token!, current.sessionId);
    return holdKey(b, key, owner);
  };

  it('an inspect whose holder changes between its two reads names no stale holder', async () => {
    const key = 'race:inspect';
    const first = await holdKey(a, key, 'owner-i');
    const held = await heldOnce(readsSession, async () => {
      await handOver(key, first, 'owner-j');
    });
    const [answer] = await Promise.all([a.store.inspect(key), held.pass()]);
    // The read that found owner-i's grant is no longer true: not held, as far as this look knows.
    expect(answer).toEqual({ seen: true, holder: null });
  });

  it('a revoke whose key changes hands before its delete revokes the new grant, never the old token', async () => {
    const key = 'race:revoke-once';
    const first = await holdKey(a, key, 'owner-o');
    let next = first;
    const held = await heldOnce(isRevokeDelete, async () => {
      next = await handOver(key, first, 'owner-p');
    });
    const [outcome] = await Promise.all([
      a.store.revoke({ key, operator: 'op', reason: 'race test' }),
      held.pass(),
    ]);
    expect(outcome.revokedToken).toBe(next.token);
    expect(outcome.newTokenFloor).toBeGreaterThan(next.token!);
    await expectHolder(key, null);
  });

  it('a revoke whose key changes hands before each of its three deletes is NOT_LEADER, revoking nothing', async () => {
    const key = 'race:revoke-hands';
    let current = await holdKey(a, key, 'owner-r0');
    const revoked = a.store.revoke({ key, operator: 'op', reason: 'race test' });
    revoked.catch(() => undefined); // judged once the gates are through
    for (let n = 1; n <= 3; n++) {
      const held = await heldOnce(isRevokeDelete, async () => {
        current = await handOver(key, current, `owner-r${n}`);
      });
      await held.pass();
    }
    await expect(revoked).rejects.toMatchObject({
      code: 'NOT_LEADER',
      message: `lock ${key} changed hands during the revoke; retry`,
      retryAfterMillis: 1_000,
    });
    await expectHolder(key, current.sessionId, current.token!);
  });
});
