import { performance } from 'node:perf_hooks';
import { TcpProxy, migratedDatabase, waitFor } from '@dlock/testing';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

/** The default: a connect through the proxy on a loaded test machine takes well under it. */
const CONNECT_TIMEOUT_MS = 1_000;
/** Two connect budgets: every connect timer pending during it has expired when it ends. */
const STALL_MS = 2 * CONNECT_TIMEOUT_MS;
/**
 * Longer than the stall, so a statement already sent on an open connection is not cut by
 * its own read timeout (that one may have been applied: it is never tried again).
 */
const STATEMENT_TIMEOUT_MS = 3 * STALL_MS;
const CONCURRENT = 6;

/** Keeps the event loop busy, as a burst of requests being admitted does. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Spinning on purpose: nothing else of this process runs meanwhile.
  }
}

/**
 * A busy process is not an unreachable database (docs/lock-server.md,
 * "Limits"). The lock-server runs in this process and reaches PostgreSQL
 * through a TCP proxy, so the test sees the moment the pool opens a new
 * connection and can stall the shared event loop right then: the connect
 * timers fire late in that stall, and the statements are tried again instead
 * of answered NOT_LEADER. With the loop idle, a database that does not answer
 * is still NOT_LEADER at once (fail closed).
 */
describe('pg backend: connect timeouts in a busy process', () => {
  let proxy: TcpProxy;
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    const dbUrl = await migratedDatabase('lockdb');
    proxy = await TcpProxy.start({ target: { port: Number(new URL(dbUrl).port) } });
    const viaProxy = new URL(dbUrl);
    viaProxy.port = String(proxy.port);
    server = await startInProcess({
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: viaProxy.toString(),
      LOCKDB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      LOCKDB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      // No background probe: the requests alone decide what the server believes.
      LOCKDB_PROBE_INTERVAL_MS: '60000',
    });
    api = new LockApi(server.url);
  });
  afterAll(async () => {
    await server.stop();
    await proxy.close();
  });

  it('a stall while the pool connects answers every acquire, none NOT_LEADER', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < CONCURRENT; i++) sessions.push(await api.session(`busy-${i}`, 30_000));
    const accepted = proxy.stats.connectionsAccepted;
    let stalled = false;
    // Checked once per turn of the loop, right after the turn that accepted a connection:
    // its PostgreSQL handshake takes several more turns, so it is still under way.
    const watch = () => {
      if (proxy.stats.connectionsAccepted > accepted) {
        stallEventLoop(STALL_MS);
        stalled = true;
      } else setImmediate(watch);
    };
    setImmediate(watch);
    const answers = await Promise.all(
      sessions.map((session, i) => api.acquire(`busy:${i}`, session, `busy-${i}`)),
    );
    expect(stalled).toBe(true);
    expect(answers.map((r) => [r.status, r.body.code])).toEqual(
      sessions.map(() => [200, undefined]),
    );
  });

  it('with the loop idle, a database that does not answer a connect is NOT_LEADER at once', async () => {
    const sessions: string[] = [];
    for (let i = 0; i < CONCURRENT; i++) sessions.push(await api.session(`dark-${i}`, 30_000));
    // The pool's open connections are cut first, so every acquire has to connect anew.
    proxy.setFault({ kind: 'reset' });
    await waitFor(async () => proxy.stats.connectionsOpen === 0, 5_000, 'connections cut');
    proxy.setFault({ kind: 'blackhole' });
    try {
      const started = performance.now();
      const answers = await Promise.all(
        sessions.map((session, i) => api.acquire(`dark:${i}`, session, `dark-${i}`)),
      );
      const elapsedMs = performance.now() - started;
      expect(answers.map((r) => [r.status, r.body.code])).toEqual(
        sessions.map(() => [503, 'NOT_LEADER']),
      );
      // Each gave up after its one connect budget, not after a retry.
      expect(elapsedMs).toBeLessThan(2 * CONNECT_TIMEOUT_MS);
    } finally {
      proxy.setFault({ kind: 'none' });
    }
  });
});
