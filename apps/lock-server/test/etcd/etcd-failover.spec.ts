import { performance } from 'node:perf_hooks';
import { http, sleep, startEtcdCluster, waitFor, type EtcdCluster } from '@dlock/testing';
import { checkHistory } from '../support/history-checker';
import { startInProcess, type RunningLockServer } from '../support/in-process';
import { startWorkload, type Workload } from './workload';

/**
 * Issue 9: a three-member cluster under an acquire/release load on one key
 * while the leader is killed (SIGKILL) or stopped (SIGSTOP) for longer than an
 * election. Safety: no two grants overlap and tokens strictly increase across
 * the election (history checker); every error in the window is 503
 * NOT_LEADER — never a grant on doubt; service resumes; no session is evicted
 * by the election (docs/lock-server.md grace).
 */
const WORKERS = 6;
/**
 * Longer than the longest pause below (2.5 s + at most 5 s waiting for the new
 * leader): etcd before 3.4.28 / 3.5.11 lets a leader that was stopped longer
 * than a lease's TTL revoke that lease when it resumes, even though the new
 * leader kept it alive (docs/lock-server-etcd.md, "Members that stall").
 */
const SESSION_TTL_MS = 10_000;
const PAUSE_MS = 2_500;
const NEW_LEADER_WAIT_MS = 5_000;
const LOCK_TTL_MS = 5_000;
/**
 * The workload's first grant after the fault, which includes its workers' 1 s NOT_LEADER
 * sleeps: 0.6-2.5 s here, 3.2 s once (SIGSTOP). This bound only catches a server that hangs
 * on the lost leader (a stuck call is cut after ETCD_CALL_TIMEOUT_MS and retried). NFR-02's
 * 2 s is asserted on the probe below (docs/lock-server-etcd.md, "Failover within 2 s").
 */
const RECOVERY_BOUND_MS = 10_000;
const PRE_FAULT_GRANTS = 10;
/**
 * NFR-02 (service back within 2 s of a leader kill) is a speed promise, so it is kept by
 * the failover bench on a quiet machine (bench/reports/lock-server-etcd-failover.md). Here
 * the members share two CPUs with the rest of the suite and the election alone can run past
 * 2 s, so the test holds the lock-server to what it adds: its own probe (not the workload,
 * whose workers sleep the 1 s NOT_LEADER hint) is answered 200 at most this long after a
 * surviving member reports the new leader. A server that waited out a call to the dead
 * leader, or kept asking it, fails this. A SIGSTOPped leader also holds the server's calls
 * to it until ETCD_CALL_TIMEOUT_MS, so there the wider RECOVERY_BOUND_MS stands.
 */
const SERVER_LAG_AFTER_ELECTION_MAX_MS = 1_000;
const PROBE_EVERY_MS = 25;
const PROBE_DEADLINE_MS = 15_000;

interface Probe {
  key: string;
  sessionId: string;
}

/** A session of its own and a grant on its own key, taken before the fault. */
async function openProbe(url: string): Promise<Probe> {
  const opened = await http('POST', `${url}/v1/sessions`, {
    body: { ownerId: 'nfr-02-probe', ttlMillis: SESSION_TTL_MS },
  });
  expect(opened.status).toBe(201);
  const probe = { key: 'payout:nfr-02-probe', sessionId: String(opened.body.sessionId) };
  expect((await probeOnce(url, probe)).status).toBe(200);
  return probe;
}

/** L4 by the holder's own session: the same grant back, once etcd has a leader to ask. */
function probeOnce(url: string, probe: Probe): Promise<{ status: number }> {
  return http('POST', `${url}/v1/locks/${probe.key}/acquire`, {
    headers: { 'x-owner-id': 'nfr-02-probe' },
    body: { sessionId: probe.sessionId },
  });
}

/** Milliseconds from `faultAt` to the first 200 of a probe sent after it. */
async function unavailableFor(url: string, probe: Probe, faultAt: number): Promise<number> {
  while (performance.now() - faultAt < PROBE_DEADLINE_MS) {
    if ((await probeOnce(url, probe)).status === 200) return performance.now() - faultAt;
    await sleep(PROBE_EVERY_MS);
  }
  return Infinity;
}

async function withCluster(fault: (cluster: EtcdCluster) => Promise<void>): Promise<{
  workload: Workload;
  faultAt: number;
  server: RunningLockServer;
  cluster: EtcdCluster;
  unavailable: Promise<number>;
  /** Milliseconds from the fault to a surviving member reporting a leader. */
  elected: Promise<number>;
}> {
  const cluster = await startEtcdCluster({
    members: 3,
    // What docs/lock-server-etcd.md asks of production on a LAN.
    heartbeatMs: 50,
    electionMs: 500,
    label: 'failover',
  });
  const server = await startInProcess({
    LOCK_BACKEND: 'etcd',
    ETCD_ENDPOINTS: cluster.endpoints.join(','),
  });
  const workload = await startWorkload(server.url, {
    key: 'payout:failover',
    workers: WORKERS,
    sessionTtlMs: SESSION_TTL_MS,
    lockTtlMs: LOCK_TTL_MS,
  });
  // The fault comes once the workload is granting steadily, not after a fixed time:
  // a slow start on a busy machine left too few grants before it to judge anything.
  await waitFor(
    () => Promise.resolve(workload.grants.length >= PRE_FAULT_GRANTS),
    30_000,
    `${PRE_FAULT_GRANTS} grants before the fault`,
  );
  const probe = await openProbe(server.url);
  const faultAt = performance.now();
  await fault(cluster);
  const unavailable = unavailableFor(server.url, probe, faultAt);
  const elected = cluster.waitForLeader(PROBE_DEADLINE_MS).then(() => performance.now() - faultAt);
  return { workload, faultAt, server, cluster, unavailable, elected };
}

/**
 * Lets the workload run until it has been granted `PRE_FAULT_GRANTS` more times
 * since the fault: a fixed time left too few grants to judge on a busy machine.
 */
async function runOnAfter(workload: Workload, faultAt: number): Promise<void> {
  await waitFor(
    () =>
      Promise.resolve(workload.grants.filter((g) => g.sentAt > faultAt).length >= PRE_FAULT_GRANTS),
    30_000,
    `${PRE_FAULT_GRANTS} grants after the fault`,
  );
}

function expectSafeAndRecovered(workload: Workload, faultAt: number): number {
  const verdict = checkHistory(workload.history.records);
  expect(verdict.violations).toEqual([]);
  const before = workload.grants.filter((g) => g.grantedAt < faultAt).length;
  const after = workload.grants.filter((g) => g.sentAt > faultAt).length;
  expect(before).toBeGreaterThan(5);
  expect(after).toBeGreaterThan(5);
  // Every error, whatever the operation, is the fail-closed 503 with its retry hint.
  for (const e of workload.errors) {
    expect({ op: e.op, status: e.status, body: e.body }).toEqual({
      op: e.op,
      status: 503,
      body: {
        code: 'NOT_LEADER',
        message: expect.any(String),
        retrySafe: true,
        retryAfterMillis: 1000,
        traceId: expect.any(String),
      },
    });
  }
  const recoveryMs = workload.recoveryAfter(faultAt);
  expect(recoveryMs).not.toBeNull();
  return recoveryMs ?? Infinity;
}

/**
 * A heartbeat answered 503 NOT_LEADER is retried after its hint, as the SDK's
 * session keeper does: on a loaded machine the two surviving members can hold
 * one more election after the fault. What must never come is an eviction
 * (410 SESSION_EXPIRED) or any other error.
 */
const HEARTBEAT_ATTEMPTS_MAX = 5;

async function heartbeatAfterRetries(url: string, id: string, owner: string): Promise<unknown> {
  let last: { status: number; body: unknown } = { status: 0, body: null };
  for (let attempt = 0; attempt < HEARTBEAT_ATTEMPTS_MAX; attempt++) {
    const res = await http('POST', `${url}/v1/sessions/${id}/heartbeat`, {
      headers: { 'x-owner-id': owner },
    });
    if (res.status === 200) return 200;
    last = { status: res.status, body: res.body };
    if (res.status !== 503 || res.body.code !== 'NOT_LEADER') break;
    await sleep(Number(res.body.retryAfterMillis));
  }
  return last;
}

async function expectSessionsAlive(url: string, workload: Workload): Promise<void> {
  const beats = await Promise.all(
    workload.sessions.map((id, i) => heartbeatAfterRetries(url, id, `w${i}`)),
  );
  expect(beats).toEqual(workload.sessions.map(() => 200));
}

describe('etcd backend under leader failure (3 members)', () => {
  it('SIGKILL of the leader: no overlap, increasing tokens, only NOT_LEADER, service back right after the election (NFR-02)', async () => {
    const { workload, faultAt, server, cluster, unavailable, elected } = await withCluster(
      async (c) => {
        const leader = await c.leader();
        await leader.kill();
      },
    );
    try {
      const [unavailableMs, electedMs] = await Promise.all([unavailable, elected]);
      console.info(
        `NFR-02: lock-server unavailable ${unavailableMs.toFixed(0)} ms after the kill, election ${electedMs.toFixed(0)} ms`,
      );
      expect(unavailableMs - electedMs).toBeLessThanOrEqual(SERVER_LAG_AFTER_ELECTION_MAX_MS);
      await runOnAfter(workload, faultAt);
      await workload.stop();
      const windowMs = expectSafeAndRecovered(workload, faultAt);
      expect(windowMs).toBeLessThan(RECOVERY_BOUND_MS);
      await expectSessionsAlive(server.url, workload);
      console.info(
        `SIGKILL leader: ${workload.history.records.length} grants, ${workload.errors.length} NOT_LEADER, first grant ${windowMs.toFixed(0)} ms after the kill`,
      );
    } finally {
      await workload.stop();
      await server.stop();
      await cluster.stop();
    }
  }, 90_000);

  it('SIGSTOP of the leader past an election: the same guarantees, and the old leader rejoins', async () => {
    let paused: Awaited<ReturnType<EtcdCluster['leader']>> | undefined;
    const { workload, faultAt, server, cluster, unavailable, elected } = await withCluster(
      async (c) => {
        paused = await c.leader();
        paused.pause();
      },
    );
    try {
      try {
        await sleep(PAUSE_MS);
        await cluster.waitForLeader(NEW_LEADER_WAIT_MS);
      } finally {
        paused?.resume();
      }
      expect(await unavailable).toBeLessThan(RECOVERY_BOUND_MS);
      await elected;
      await runOnAfter(workload, faultAt);
      await workload.stop();
      const windowMs = expectSafeAndRecovered(workload, faultAt);
      expect(windowMs).toBeLessThan(RECOVERY_BOUND_MS);
      await expectSessionsAlive(server.url, workload);
      const ready = await http('GET', `${server.url}/health/ready`);
      expect(ready.status).toBe(200);
      console.info(
        `SIGSTOP leader: ${workload.history.records.length} grants, ${workload.errors.length} NOT_LEADER, first grant ${windowMs.toFixed(0)} ms after the stop`,
      );
    } finally {
      paused?.resume();
      await workload.stop();
      await server.stop();
      await cluster.stop();
    }
  }, 90_000);
});
