import { answerOf, callOnce, type Answer } from '../infra/http.infra';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DlockSystem } from '../dlock-system.infra';
import { Evidence, type ScenarioOutcome } from './scenario.types';

interface Grant {
  fencingToken: string;
  grantProof: string;
}

/** A short session and lease: the drill waits them out (docs/harness.md, "Linearizability"). */
const SHORT_TTL_MS = 1_000;
/**
 * The sessions and leases that must not lapse: far longer than the drill's calls
 * between two heartbeats take, even on a starved machine (3 s lapsed there).
 */
const TTL_MS = 15_000;
const LEASE_MS = 15_000;
/** Long enough for a 1 s lease or session to lapse on either backend (etcd reaps leases every 0.5 s). */
const LAPSE_WAIT_MS = 2_500;

/** One owner's L1–L8 calls through the lock recorder, each answer kept. */
class Caller {
  session = '';

  constructor(
    private readonly url: string,
    readonly owner: string,
  ) {}

  private call<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    o: Partial<{ body: unknown; headers: Record<string, string> }> = {},
  ) {
    return answerOf(
      callOnce<T>('lock-server', this.url, {
        method,
        path,
        headers: { 'X-Owner-Id': this.owner, ...o.headers },
        body: o.body,
      }),
    );
  }

  async open(ttlMillis: number): Promise<Answer<{ sessionId: string }>> {
    const a = await this.call<{ sessionId: string }>('POST', '/v1/sessions', {
      body: { ownerId: this.owner, ttlMillis },
    });
    if (a.body) this.session = a.body.sessionId;
    return a;
  }

  heartbeat() {
    return this.call('POST', `/v1/sessions/${this.session}/heartbeat`);
  }

  close() {
    return this.call('DELETE', `/v1/sessions/${this.session}`);
  }

  acquire(key: string, ttlMillis = LEASE_MS) {
    return this.call<Grant>('POST', `/v1/locks/${key}/acquire`, {
      body: { sessionId: this.session, ttlMillis },
    });
  }

  renew(key: string, g: Grant) {
    return this.call<Grant>('POST', `/v1/locks/${key}/renew`, {
      headers: { 'X-Fencing-Token': g.fencingToken },
      body: { sessionId: this.session },
    });
  }

  release(key: string, g: Grant) {
    return this.call('DELETE', `/v1/locks/${key}`, {
      headers: { 'X-Fencing-Token': g.fencingToken, 'X-Grant-Proof': g.grantProof },
    });
  }

  inspect(key: string) {
    return this.call<{ held: boolean; fencingToken?: string }>('GET', `/v1/locks/${key}`);
  }

  revoke(key: string, expectedToken: string) {
    return this.call<{ newTokenFloor: string }>('POST', `/v1/locks/${key}/revoke`, {
      body: { operator: this.owner, reason: 'linearizability drill', expectedToken },
    });
  }
}

const big = (s: string | undefined) => (s === undefined ? -1n : BigInt(s));

export interface LockWorkout extends ScenarioOutcome {
  /** The keys it used: the checker can be narrowed to them. */
  keys: string[];
}

/**
 * A drill over every lock-server call (L1–L8) on fresh keys, through the
 * lock recorder: a handover, contention, renew, inspect, a revocation and a
 * stale renew and release after it, a lease and a session left to lapse and
 * taken over, L3 freeing a lock. Each step records what a correct server
 * answers; under LOCK_SERVER_BROKEN some answers change, which is the point
 * of the negative controls (docs/harness.md). Never throws on an answer.
 */
export async function lockWorkout(sys: DlockSystem, tag: string): Promise<LockWorkout> {
  const ev = new Evidence();
  const [k1, k2, k3] = ['k1', 'k2', 'k3'].map((k) => `lin:${tag}:${k}`);
  const [a, b, c] = ['a', 'b', 'c'].map((w) => new Caller(sys.recorder.url, `lin-${tag}-${w}`));
  ev.expect((await a.open(TTL_MS)).status === 200, 'A opens a session');
  ev.expect((await b.open(TTL_MS)).status === 200, 'B opens a session');
  const g1 = (await a.acquire(k1)).body;
  ev.expect(g1 !== undefined, 'A acquires k1');
  if (!g1) return { ...ev.outcome(), keys: [k1, k2, k3] };
  ev.expect(
    (await b.acquire(k1)).code === 'LOCK_CONTENDED',
    "B's acquire of a held key is contended",
  );
  ev.expect((await a.renew(k1, g1)).status === 200, 'A renews');
  ev.expect((await a.inspect(k1)).body?.fencingToken === g1.fencingToken, 'L7 shows A');
  ev.expect((await a.release(k1, g1)).status === 200, 'A releases');
  const g2 = (await b.acquire(k1)).body;
  ev.expect(big(g2?.fencingToken) > big(g1.fencingToken), 'the next holder has a larger token');
  if (g2) await afterRevoke(ev, { a, b, k1, g2 });
  await lapses(ev, { a, b, c, k2, k3 });
  ev.expect((await a.close()).status === 200, 'A closes its session');
  const g5 = (await b.acquire(k1)).body;
  ev.expect(g5 !== undefined, 'L3 freed k1: B acquires it');
  if (g5) await b.release(k1, g5);
  await b.close();
  await c.close();
  return { ...ev.outcome(), keys: [k1, k2, k3] };
}

/** L8 on B's grant, then B's stale renew and release (the compare a broken release skips). */
async function afterRevoke(
  ev: Evidence,
  { a, b, k1, g2 }: { a: Caller; b: Caller; k1: string; g2: Grant },
): Promise<void> {
  const revoked = await b.revoke(k1, g2.fencingToken);
  const floor = big(revoked.body?.newTokenFloor);
  ev.expect(
    floor > big(g2.fencingToken),
    'the revocation raised the floor above the revoked token',
  );
  ev.expect(
    (await b.renew(k1, g2)).code === 'LOCK_LOST',
    "B's renew after the revocation is LOCK_LOST",
  );
  const g3 = (await a.acquire(k1)).body;
  ev.expect(big(g3?.fencingToken) > floor, 'the grant after the revocation is above its floor');
  ev.expect((await b.release(k1, g2)).code === 'LOCK_LOST', "B's stale release is LOCK_LOST");
}

/** A lease of 1 s and a session of 1 s without heartbeats: both lapse, others take the keys. */
async function lapses(
  ev: Evidence,
  { a, b, c, k2, k3 }: { a: Caller; b: Caller; c: Caller; k2: string; k3: string },
): Promise<void> {
  ev.expect((await a.acquire(k2, SHORT_TTL_MS)).status === 200, 'A takes k2 for 1 s');
  // Opened just before its acquire: on a loaded machine the drill's earlier calls outlast 1 s.
  ev.expect((await c.open(SHORT_TTL_MS)).status === 200, 'C opens a 1 s session');
  ev.expect((await c.acquire(k3)).status === 200, 'C (a 1 s session) takes k3');
  for (let waited = 0; waited < LAPSE_WAIT_MS; waited += 500) {
    await Promise.all([a.heartbeat(), b.heartbeat(), sleep(500)]);
  }
  const taken2 = await b.acquire(k2);
  ev.expect(taken2.status === 200, `B takes k2 after A's lease lapsed (${taken2.code ?? 200})`);
  const taken3 = await b.acquire(k3);
  ev.expect(taken3.status === 200, `B takes k3 after C's session lapsed (${taken3.code ?? 200})`);
  const late = await c.heartbeat();
  ev.expect(
    late.code === 'SESSION_EXPIRED',
    `C's late heartbeat is SESSION_EXPIRED (${late.code ?? 200})`,
  );
  for (const [key, g] of [
    [k2, taken2.body],
    [k3, taken3.body],
  ] as const) {
    if (g) await b.release(key, g);
  }
}
