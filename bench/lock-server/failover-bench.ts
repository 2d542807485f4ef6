/**
 * Unavailability window of an etcd leader kill, seen through the lock-server
 * (issue 9, issue 14 §7, NFR-02): a three-member cluster (heartbeat 50 ms,
 * election 500 ms unless BENCH_ETCD_HEARTBEAT_MS / BENCH_ETCD_ELECTION_MS say
 * otherwise; data on tmpfs when there is one), a lock-server process on it,
 * clients in closed acquire/release loops on their own keys; SIGKILL the
 * leader and time kill -> first successful acquire whose request was sent
 * after the kill. Each run is a fresh cluster; the modes (ETCD_FAULT_HANDLING)
 * alternate within a run number.
 *
 *   npm run build && node dist/bench/lock-server/failover-bench.js
 *   BENCH_FAILOVER_RUNS=12 BENCH_FAILOVER_MODES=tuned node dist/bench/lock-server/failover-bench.js
 *
 * Appends its section to bench/reports/lock-server-etcd-failover.md.
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startEtcdCluster, type EtcdCluster } from '../../libs/testing/src/etcd';
import { ROOT, agent, call, machineLine, median, sleep, startEtcdLockServer } from './etcd-common';
import { loadGate, reportWithLoad } from '../load-gate';
import { writeKeepingNotes } from '../report-notes';

const RUNS = Number(process.env.BENCH_FAILOVER_RUNS ?? 10);
const CLIENTS = Number(process.env.BENCH_FAILOVER_CLIENTS ?? 8);
const MODES = (process.env.BENCH_FAILOVER_MODES ?? 'tuned,default')
  .split(',')
  .filter((m): m is Mode => m === 'tuned' || m === 'default');
const HEARTBEAT_MS = Number(process.env.BENCH_ETCD_HEARTBEAT_MS ?? 50);
const ELECTION_MS = Number(process.env.BENCH_ETCD_ELECTION_MS ?? 500);
/** Passed to the lock-server as ETCD_RESEND_AFTER_MS when set (its default otherwise). */
const RESEND_AFTER_MS = process.env.BENCH_ETCD_RESEND_AFTER_MS;
const PROMISE_MS = 2_000;
const WARM_MS = 1_500;
const GIVE_UP_MS = 15_000;
const REPORT =
  process.env.BENCH_FAILOVER_REPORT ??
  path.join(ROOT, 'bench', 'reports', 'lock-server-etcd-failover.md');

type Mode = 'default' | 'tuned';

interface RunResult {
  mode: Mode;
  windowMs: number;
  electionMs: number;
  notLeader: number;
  otherErrors: string[];
  grantsBefore: number;
}

/** Polls member status until a leader other than `old` is seen; ms after `from`. */
async function electionTime(cluster: EtcdCluster, from: number): Promise<number> {
  const leader = await cluster.waitForLeader(GIVE_UP_MS);
  void leader;
  return performance.now() - from;
}

/** What the clients' loops saw, shared by all of them; the kill sets `killAt`. */
interface Probe {
  running: boolean;
  killAt: number;
  /** When the first acquire sent after the kill was granted. */
  recoveredAt: number;
  notLeader: number;
  grantsBefore: number;
  otherErrors: string[];
}

async function oneRun(mode: Mode): Promise<RunResult> {
  const cluster = await startEtcdCluster({
    members: 3,
    heartbeatMs: HEARTBEAT_MS,
    electionMs: ELECTION_MS,
    label: 'bench-failover',
  });
  const server = await startEtcdLockServer(cluster.endpoints, {
    ETCD_FAULT_HANDLING: mode,
    ...(RESEND_AFTER_MS === undefined ? {} : { ETCD_RESEND_AFTER_MS: RESEND_AFTER_MS }),
  });
  const probe: Probe = {
    running: true,
    killAt: Infinity,
    recoveredAt: Infinity,
    notLeader: 0,
    grantsBefore: 0,
    otherErrors: [],
  };
  try {
    const sessions = await openSessions(server.url);
    const loops = sessions.map((sessionId, i) => acquireLoop(server.url, sessionId, i, probe));
    await sleep(WARM_MS);
    const leader = await cluster.leader();
    probe.killAt = performance.now();
    await leader.kill();
    const election = electionTime(cluster, probe.killAt);
    const giveUp = probe.killAt + GIVE_UP_MS;
    while (probe.recoveredAt === Infinity && performance.now() < giveUp) await sleep(5);
    const electionMs = await election;
    await sleep(300);
    probe.running = false;
    await Promise.all(loops);
    return {
      mode,
      windowMs: probe.recoveredAt - probe.killAt,
      electionMs,
      notLeader: probe.notLeader,
      otherErrors: probe.otherErrors,
      grantsBefore: probe.grantsBefore,
    };
  } finally {
    probe.running = false;
    await server.stop();
    await cluster.stop();
  }
}

/** One session per client. */
function openSessions(url: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const res = await call(
        url,
        'POST',
        '/v1/sessions',
        {},
        {
          ownerId: `fo-${i}`,
          ttlMillis: 20_000,
        },
      );
      if (res.status !== 201) throw new Error(`session: ${res.status}`);
      return res.body.sessionId as string;
    }),
  );
}

/** Client i acquires and releases its own key until the run ends, counting what it is told. */
async function acquireLoop(url: string, sessionId: string, i: number, probe: Probe): Promise<void> {
  const owner = `fo-${i}`;
  const key = `bench:failover:${i}`;
  while (probe.running) {
    const sentAt = performance.now();
    const res = await call(
      url,
      'POST',
      `/v1/locks/${key}/acquire`,
      {
        'x-owner-id': owner,
      },
      { sessionId, ttlMillis: 20_000 },
    );
    if (res.status === 200) {
      if (sentAt > probe.killAt && probe.recoveredAt === Infinity)
        probe.recoveredAt = performance.now();
      if (sentAt < probe.killAt) probe.grantsBefore++;
      await call(url, 'DELETE', `/v1/locks/${key}?sessionId=${sessionId}`, {
        'x-owner-id': owner,
        'x-fencing-token': res.body.fencingToken as string,
        'x-grant-proof': res.body.grantProof as string,
      });
    } else if (res.status === 503 && res.body?.code === 'NOT_LEADER') {
      probe.notLeader++;
      await sleep(10);
    } else {
      probe.otherErrors.push(`${res.status} ${JSON.stringify(res.body)}`);
      await sleep(10);
    }
  }
}

/** The BENCH_* settings of this run, as they would be typed. */
function benchEnv(): string {
  return Object.entries(process.env)
    .filter(([name]) => name.startsWith('BENCH_') && name !== 'BENCH_FAILOVER_REPORT')
    .map(([name, value]) => `${name}=${value}`)
    .sort()
    .join(' ');
}

function section(results: RunResult[], seconds: number, loadLine: string): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : 'no recovery');
  const rows = results.map(
    (r, i) =>
      `| ${i + 1} | ${r.mode} | ${f(r.windowMs)} | ${f(r.electionMs)} | ${r.notLeader} | ${r.otherErrors.length} | ${r.grantsBefore} |`,
  );
  const med = (mode: Mode, pick: (r: RunResult) => number) =>
    median(results.filter((r) => r.mode === mode).map(pick));
  const summary = (mode: Mode) => {
    const runs = results.filter((r) => r.mode === mode);
    if (runs.length === 0) return [];
    const windows = runs.map((r) => r.windowMs);
    const over = windows.filter((w) => !(w < PROMISE_MS)).length;
    return [
      `- ${mode} fault handling, ${runs.length} kills: median window ${f(med(mode, (r) => r.windowMs))} ms, max ${f(Math.max(...windows))} ms, ${over} at or above ${PROMISE_MS} ms (median election ${f(med(mode, (r) => r.electionMs))} ms)`,
    ];
  };
  return [
    '# Lock-server on etcd: leader-kill unavailability',
    '',
    `- command: \`npm run build && ${benchEnv()} node dist/bench/lock-server/failover-bench.js\` (${CLIENTS} clients)`,
    `- machine: ${machineLine()}`,
    `- load: ${loadLine}`,
    `- etcd 3.4 x3 on loopback, --heartbeat-interval=${HEARTBEAT_MS} --election-timeout=${ELECTION_MS}, data on tmpfs; ETCD_RESEND_AFTER_MS=${RESEND_AFTER_MS ?? '250 (default)'}; the load, the lock-server and the members share the CPUs`,
    '- window = SIGKILL of the leader -> first 200 acquire whose request was sent after the kill; election = kill -> a surviving member reports a leader (status polled every ~50 ms)',
    `- total wall time: ${seconds.toFixed(0)} s`,
    '',
    '| run | fault handling | window ms | election ms | NOT_LEADER answers | other errors | grants before kill |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    ...summary('tuned'),
    ...summary('default'),
    `- promise (NFR-02): every tuned kill under ${PROMISE_MS} ms, median under 1000 ms: ${
      results.some((r) => r.mode === 'tuned' && !(r.windowMs < PROMISE_MS)) ||
      !(med('tuned', (r) => r.windowMs) < 1_000)
        ? 'NOT met'
        : 'met'
    }`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:lock:failover');
  const began = performance.now();
  const loadBefore = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const results: RunResult[] = [];
  for (let i = 0; i < RUNS; i++) {
    for (const mode of MODES) {
      const r = await oneRun(mode);
      console.log(
        `[failover] run ${i + 1} ${mode}: window ${r.windowMs.toFixed(0)} ms, election ${r.electionMs.toFixed(0)} ms, ${r.notLeader} NOT_LEADER, ${r.otherErrors.length} other errors ${r.otherErrors.slice(0, 2).join(' ')}`,
      );
      results.push(r);
    }
  }
  const loadAfter = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const loadLine = `load average (1/5/15 min) ${loadBefore} at the start, ${loadAfter} at the end, on ${os.cpus().length} CPUs`;
  const text = section(results, (performance.now() - began) / 1000, loadLine);
  writeKeepingNotes(REPORT, reportWithLoad(gate, text));
  console.log(text);
  agent.destroy();
}

main().catch((err: unknown) => {
  console.error('[failover] failed:', err);
  process.exit(1);
});
