import { performance } from 'node:perf_hooks';
import { fencedUpdateStatement } from '@dlock/persistence';
import {
  TcpProxy,
  createDatabase,
  http,
  migrate,
  sleep,
  spawnApp,
  startReplicatedPostgres,
  waitFor,
  withClient,
  type ReplicatedPostgres,
  type RunningApp,
  scrapeSeries,
} from '@dlock/testing';
import { LockApi } from '../support/lock-client';

/**
 * NFR-05 (docs/operations.md, "lockdb failover"): the lock-server process on a
 * lockdb primary with a streaming standby; the primary is SIGKILLed under load
 * and the standby promoted.
 *
 * The lock-server reaches lockdb through a TcpProxy the test moves to the
 * promoted standby: node-postgres has no multi-host URL with
 * target_session_attrs, and a Cloud SQL failover keeps the instance's IP and
 * moves it to the new primary, which is what the proxy does here.
 */
const LOCKDB = 'lockdb';
const CLIENTS = 4;
/** Every third grant is kept, the others released: both kinds must survive. */
const KEEP_EVERY = 3;
const GRANT_TTL_MS = 30_000;
const SESSION_TTL_MS = 20_000;
const HEARTBEAT_EVERY_MS = 1_000;

const serverEnv = (url: string) => ({
  LOCK_BACKEND: 'pg',
  LOCKDB_URL: url,
  LOCKDB_PROBE_INTERVAL_MS: '200',
  LOCKDB_CONNECT_TIMEOUT_MS: '300',
  LOCKDB_STATEMENT_TIMEOUT_MS: '1000',
  LOCK_NOT_LEADER_RETRY_AFTER_MS: '100',
});

type LockdbPair = Awaited<ReturnType<typeof lockdbPair>>;

/** A lockdb pair, migrated, and a lock-server process reaching it through a movable address. */
async function lockdbPair(mode: 'sync' | 'async') {
  const pg = await startReplicatedPostgres({ mode, label: `lockdb-${mode}` });
  await pg.waitStreaming(10_000);
  await withClient(pg.primary.url('postgres'), (c) => c.query(`CREATE DATABASE ${LOCKDB}`));
  await migrate(pg.primary.url(LOCKDB), 'lockdb');
  const address = await TcpProxy.start({ target: { port: pg.primary.port } });
  const server = await spawnApp(
    'lock-server',
    serverEnv(`postgres://postgres:postgres@127.0.0.1:${address.port}/${LOCKDB}`),
  );
  return {
    pg,
    address,
    server,
    api: new LockApi(server.url),
    async stop() {
      await server.stop();
      await address.close();
      await pg.stop();
    },
  };
}

/** The failover: the primary dies, the standby is promoted, the address follows it. */
async function failOver(pg: ReplicatedPostgres, address: TcpProxy): Promise<void> {
  await pg.primary.kill();
  await pg.promoteStandby(10_000);
  address.retarget({ port: pg.standby.port });
}

async function ready(server: RunningApp): Promise<void> {
  await waitFor(
    async () => (await http('GET', `${server.url}/health/ready`)).status === 200,
    10_000,
    'the lock-server ready on the promoted database',
  );
}

interface Ack {
  key: string;
  token: bigint;
  sessionId: string;
  sentAtMs: number;
  ackedAtMs: number;
  kept: boolean;
  /** The release was answered 204. */
  released: boolean;
}

/** One client: acquire, keep or release, heartbeat; every answer recorded. */
class LoadClient {
  readonly acks: Ack[] = [];
  readonly unexpected: string[] = [];
  notLeader = 0;
  sessionId = '';
  private lastBeatMs = 0;

  constructor(
    private readonly api: LockApi,
    readonly ownerId: string,
  ) {}

  async run(stop: { now: boolean }): Promise<void> {
    this.sessionId = await this.api.session(this.ownerId, SESSION_TTL_MS);
    for (let i = 1; !stop.now; i++) {
      await this.beat();
      const key = `load:${this.ownerId}:${i}`;
      const sentAtMs = performance.now();
      const res = await this.api.acquire(key, this.sessionId, this.ownerId, {
        ttlMillis: GRANT_TTL_MS,
      });
      if (res.status === 503 && res.body?.code === 'NOT_LEADER') {
        this.notLeader++;
        await sleep(50);
        continue;
      }
      if (res.status !== 200) {
        this.unexpected.push(`acquire ${key}: ${res.status} ${res.text}`);
        continue;
      }
      const ack: Ack = {
        key,
        token: BigInt(res.body.fencingToken as string),
        sessionId: this.sessionId,
        sentAtMs,
        ackedAtMs: performance.now(),
        kept: i % KEEP_EVERY === 0,
        released: false,
      };
      this.acks.push(ack);
      if (!ack.kept) await this.release(ack);
    }
  }

  private async release(ack: Ack): Promise<void> {
    const res = await this.api.release(ack.key, ack.sessionId, ack.token.toString());
    if (res.status === 204) ack.released = true;
    else if (res.status !== 503) this.unexpected.push(`release ${ack.key}: ${res.status}`);
  }

  private async beat(): Promise<void> {
    if (performance.now() - this.lastBeatMs < HEARTBEAT_EVERY_MS) return;
    this.lastBeatMs = performance.now();
    const res = await this.api.heartbeat(this.sessionId, this.ownerId);
    if (res.status !== 200 && res.status !== 503)
      this.unexpected.push(`heartbeat: ${res.status} ${res.text}`);
  }
}

/** Any grant acknowledged before another was asked for carries a lower token. */
function tokensOutOfOrder(acks: Ack[]): string[] {
  const byAck = [...acks].sort((a, b) => a.ackedAtMs - b.ackedAtMs);
  const bySend = [...acks].sort((a, b) => a.sentAtMs - b.sentAtMs);
  const wrong: string[] = [];
  let highest: Ack | undefined;
  let next = 0;
  for (const later of bySend) {
    while (next < byAck.length && byAck[next].ackedAtMs < later.sentAtMs) {
      if (!highest || byAck[next].token > highest.token) highest = byAck[next];
      next++;
    }
    if (highest && later.token <= highest.token)
      wrong.push(`${later.key}=${later.token} after ${highest.key}=${highest.token}`);
  }
  return wrong;
}

/** The fields of the first log line of `event` the process wrote. */
function logged(output: string, event: string): Record<string, unknown> | undefined {
  const line = output.split('\n').find((l) => l.includes(`"event":"${event}"`));
  return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
}

/** A table fenced as docs/extending.md shows (`fence < token` in the one UPDATE), on the run's server. */
async function fencedTable(): Promise<{
  write(token: bigint): Promise<boolean>;
  fence(): Promise<bigint>;
}> {
  const url = await createDatabase('failover_guard');
  await withClient(url, async (c) => {
    await c.query(
      'CREATE TABLE fenced_resource (id text PRIMARY KEY, fence bigint NOT NULL, note text)',
    );
    await c.query(`INSERT INTO fenced_resource VALUES ('r1', 0, NULL)`);
  });
  return {
    write: (token) =>
      withClient(url, async (c) => {
        const { sql, params } = fencedUpdateStatement({
          table: 'fenced_resource',
          id: 'r1',
          token,
          set: { note: `written with ${token}` },
        });
        return (await c.query(sql, params)).rowCount === 1;
      }),
    fence: () =>
      withClient(url, async (c) => {
        const { rows } = await c.query<{ fence: string }>(
          'SELECT fence::text FROM fenced_resource',
        );
        return BigInt(rows[0].fence);
      }),
  };
}

describe('pg backend: lockdb failover (NFR-05)', () => {
  let sync: LockdbPair;
  let async: LockdbPair;

  beforeAll(async () => {
    // Both set up at once: most of it is waiting for servers to start.
    const [s, a] = await Promise.allSettled([lockdbPair('sync'), lockdbPair('async')]);
    if (s.status === 'fulfilled') sync = s.value;
    if (a.status === 'fulfilled') async = a.value;
    for (const r of [s, a]) if (r.status === 'rejected') throw r.reason;
  });
  afterAll(async () => {
    await sync?.stop();
    await async?.stop();
  });

  it('a synchronous standby, promoted under load, loses no grant, release or session and never reissues a token', async () => {
    const { pg, address, server, api } = sync;
    const clients = Array.from({ length: CLIENTS }, (_, i) => new LoadClient(api, `load-${i}`));
    const stop = { now: false };
    const running = Promise.all(clients.map((c) => c.run(stop)));
    await waitFor(
      async () => clients.every((c) => c.acks.length >= 6),
      10_000,
      'load before the kill',
    );
    const killedAtMs = performance.now();
    await failOver(pg, address);
    await ready(server);
    await waitFor(
      async () => clients.every((c) => c.acks.filter((a) => a.sentAtMs > killedAtMs).length >= 3),
      10_000,
      'grants after the failover',
    );
    stop.now = true;
    await running;

    const acks = clients.flatMap((c) => c.acks);
    expect(clients.flatMap((c) => c.unexpected)).toEqual([]);
    // The clients saw the failover, and the load went on past it.
    expect(clients.reduce((n, c) => n + c.notLeader, 0)).toBeGreaterThan(0);
    const before = acks.filter((a) => a.ackedAtMs < killedAtMs);
    expect(before.length).toBeGreaterThanOrEqual(CLIENTS * 6);
    // No token twice, and none at or below one already acknowledged.
    expect(new Set(acks.map((a) => a.token)).size).toBe(acks.length);
    expect(tokensOutOfOrder(acks)).toEqual([]);

    // Every acknowledged grant and release is on the promoted standby as acknowledged.
    const rows = await withClient(pg.standby.url(LOCKDB), (c) =>
      c.query<{ lock_key: string; session_id: string | null; fencing_token: string }>(
        'SELECT lock_key, session_id, fencing_token FROM lock_entry WHERE lock_key = ANY($1)',
        [acks.map((a) => a.key)],
      ),
    );
    const stored = new Map(rows.rows.map((r) => [r.lock_key, r]));
    for (const ack of acks) {
      const row = stored.get(ack.key);
      expect([ack.key, row?.fencing_token]).toEqual([ack.key, ack.token.toString()]);
      if (ack.kept) expect([ack.key, row?.session_id]).toEqual([ack.key, ack.sessionId]);
      if (ack.released) expect([ack.key, row?.session_id]).toEqual([ack.key, null]);
    }
    // Each grant kept from before the kill is still its holder's (renew keeps the token).
    for (const ack of before.filter((a) => a.kept)) {
      const renewed = await api.renew(ack.key, ack.sessionId, ack.token.toString());
      expect([ack.key, renewed.status, renewed.body?.fencingToken]).toEqual([
        ack.key,
        200,
        ack.token.toString(),
      ]);
    }
    for (const client of clients) {
      expect((await api.heartbeat(client.sessionId, client.ownerId)).status).toBe(200);
    }
    expect(
      await scrapeSeries(server.url, 'lock_token_regression_total{guard="lock-server"}', 'throw'),
    ).toBe(0);
  });

  it('an asynchronous standby loses acknowledged grants and rewinds tokens: the guard refuses the reissued token, the lock-server refuses to serve and reports token_regression', async () => {
    const { pg, address, server, api } = async;
    const owner = 'async-1';
    const session = await api.session(owner, SESSION_TTL_MS);
    const grant = async (key: string) => {
      const res = await api.acquire(key, session, owner, { ttlMillis: GRANT_TTL_MS });
      expect([key, res.status]).toEqual([key, 200]);
      return BigInt(res.body.fencingToken as string);
    };
    for (let i = 0; i < 3; i++) await grant(`before:${i}`);
    await pg.waitReplayed(10_000);
    // The standby stops hearing from the primary, which acknowledges on regardless (async).
    pg.replicationLink.setFault({ kind: 'reset' });
    // Past the sequence's WAL look-ahead (32 values): the standby cannot know of these.
    for (let i = 0; i < 40; i++) await grant(`ahead:${i}`);
    const highest = await grant('ahead:held');
    const guard = await fencedTable();
    expect(await guard.write(highest)).toBe(true);

    await failOver(pg, address);

    // The promoted standby lost acknowledged grants, and its sequence went back below them.
    const promoted = await withClient(pg.standby.url(LOCKDB), async (c) => {
      const held = await c.query(`SELECT 1 FROM lock_entry WHERE lock_key = 'ahead:held'`);
      const next = await c.query<{ t: string }>(`SELECT nextval('fencing_token_seq')::text AS t`);
      return { heldRows: held.rowCount, reissued: BigInt(next.rows[0].t) };
    });
    expect(promoted.heldRows).toBe(0);
    expect(promoted.reissued).toBeLessThan(highest);
    // The guard refuses the token a rewound source would hand out next.
    expect(await guard.write(promoted.reissued)).toBe(false);
    expect(await guard.fence()).toBe(highest);

    // The lock-server fails closed and says why.
    const event = await waitFor(
      async () => logged(server.output(), 'token_regression'),
      10_000,
      'the token_regression event',
    );
    expect(event).toMatchObject({ guard: 'lock-server', highestToken: highest.toString() });
    expect(BigInt(event.presentedToken as string)).toBeLessThan(highest);
    const refused = await api.acquire('after:1', session, owner);
    expect([refused.status, refused.body?.code]).toEqual([503, 'NOT_LEADER']);
    expect((await http('GET', `${server.url}/health/ready`)).status).toBe(503);
    expect(
      await scrapeSeries(server.url, 'lock_token_regression_total{guard="lock-server"}', 'throw'),
    ).toBe(1);

    // The operator's fix (docs/operations.md): the sequence above every token handed out.
    await withClient(pg.standby.url(LOCKDB), (c) =>
      c.query(`SELECT setval('fencing_token_seq', $1::bigint)`, [(highest + 1000n).toString()]),
    );
    await ready(server);
    expect(await grant('after:2')).toBeGreaterThan(highest);
    expect(
      await scrapeSeries(server.url, 'lock_token_regression_total{guard="lock-server"}', 'throw'),
    ).toBe(1);
  });
});
