/**
 * The lock-server's own CPU per acquire+release pair, on pg and on etcd, for
 * one or more builds side by side (bench/reports/lock-server-cpu.md). CPU
 * time of the lock-server process (/proc/<pid>/stat, user + system) before and
 * after N pairs at a low, fixed concurrency: on a shared machine it moves far
 * less than throughput does, and the builds are measured interleaved in one
 * sitting (A B A B ...), each after the same warm-up, so drift lands on all.
 *
 *   npm run build && cp -a dist .tmp/dist-before           # the build to compare with
 *   … change, npm run build …
 *   BENCH_CPU_BUILDS=.tmp/dist-before,dist node dist/bench/lock-server/cpu-per-pair.js
 *   BENCH_CPU_BACKENDS=etcd BENCH_CPU_PAIRS=2000 BENCH_CPU_ROUNDS=5 …
 *   BENCH_CPU_PROF_DIR=.tmp/prof …   # a V8 CPU profile of each lock-server (profile-by-package.js)
 *
 * Prints a table; writes nothing. It does not measure throughput and needs no
 * quiet machine, but its figures are relative: compare builds of one sitting.
 */
import os from 'node:os';
import path from 'node:path';
import { readFileSync, rmSync } from 'node:fs';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { startEtcd } from '../../libs/testing/src/etcd';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';
import { DATA_ROOT, ROOT, call, median, sleep, startLockServerProcess } from './etcd-common';

const BUILDS = (process.env.BENCH_CPU_BUILDS ?? 'dist').split(',').filter(Boolean);
const BACKENDS = (process.env.BENCH_CPU_BACKENDS ?? 'pg,etcd').split(',').filter(Boolean);
const PAIRS = Number(process.env.BENCH_CPU_PAIRS ?? 1500);
const WARMUP_PAIRS = Number(process.env.BENCH_CPU_WARMUP ?? 2000);
const ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 3);
const IN_FLIGHT = Number(process.env.BENCH_CPU_IN_FLIGHT ?? 4);
const LEASE_MS = 30_000;
const RESENDS_MAX = 20;
const HEARTBEAT_MS = 15_000;
/** /proc/<pid>/stat counts CPU time in clock ticks (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_S) * 1e6;
}

interface Server {
  build: string;
  backend: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const owner = (i: number) => `cpu-bench-${i}`;

async function start(build: string, backend: string, env: Record<string, string>, n: number) {
  const main = path.resolve(ROOT, build, 'apps', 'lock-server', 'main.js');
  // A key prefix of its own per server on the one etcd: no server sees another's keys.
  const prefix = { ETCD_KEY_PREFIX: `cpu-${n}/` };
  const proc = await startLockServerProcess({ ...env, ...prefix }, main);
  return { build, backend, url: proc.url, pid: proc.proc.pid ?? 0, stop: proc.stop };
}

/** A session per worker, fresh for each run of pairs: a run ends well inside its TTL. */
async function openSessions(url: string): Promise<string[]> {
  const sessions: string[] = [];
  for (let i = 0; i < IN_FLIGHT; i++) {
    const body = { ownerId: owner(i), ttlMillis: 60_000 };
    const res = await call(url, 'POST', '/v1/sessions', {}, body);
    if (res.status !== 201) throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
    sessions.push(res.body.sessionId as string);
  }
  return sessions;
}

let keySerial = 0;

/**
 * One request, sent again after a 503 NOT_LEADER (an etcd call past its deadline on a
 * loaded machine); a release re-sent after one may find its grant already gone (409).
 */
async function send(url: string, method: string, pathname: string, headers: object, body?: object) {
  for (let attempt = 1; ; attempt++) {
    const res = await call(url, method, pathname, headers as Record<string, string>, body);
    if (res.status !== 503 || attempt === RESENDS_MAX) return { ...res, resent: attempt > 1 };
    await sleep(50);
  }
}

/** `pairs` acquire+release pairs, IN_FLIGHT at a time, each on a key never used before. */
async function pairs(server: Server, count: number, sessions: string[]): Promise<void> {
  // A run on a loaded machine can outlast a session's TTL: each is kept alive, as the SDK does.
  const beat = setInterval(() => {
    sessions.forEach((id, i) => {
      void call(server.url, 'POST', `/v1/sessions/${id}/heartbeat`, { 'x-owner-id': owner(i) });
    });
  }, HEARTBEAT_MS);
  try {
    await runPairs(server, count, sessions);
  } finally {
    clearInterval(beat);
  }
}

async function runPairs(server: Server, count: number, sessions: string[]): Promise<void> {
  let left = count;
  await Promise.all(
    sessions.map(async (sessionId, i) => {
      const headers = { 'x-owner-id': owner(i) };
      while (left-- > 0) {
        const key = `cpu:k${++keySerial}`;
        const body = { sessionId, ttlMillis: LEASE_MS };
        const got = await send(server.url, 'POST', `/v1/locks/${key}/acquire`, headers, body);
        if (got.status !== 200)
          throw new Error(`acquire: ${got.status} ${JSON.stringify(got.body)}`);
        const res = await send(server.url, 'DELETE', `/v1/locks/${key}?sessionId=${sessionId}`, {
          ...headers,
          'x-fencing-token': got.body.fencingToken as string,
          'x-grant-proof': got.body.grantProof as string,
        });
        if (res.status !== 204 && !(res.resent && res.status === 409))
          throw new Error(`release: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }),
  );
}

async function measure(server: Server): Promise<number> {
  const sessions = await openSessions(server.url);
  const before = cpuUs(server.pid);
  await pairs(server, PAIRS, sessions);
  return (cpuUs(server.pid) - before) / PAIRS;
}

async function main(): Promise<void> {
  const dir = path.join(DATA_ROOT, `bench-cpu-${process.pid}`);
  const pg = BACKENDS.includes('pg')
    ? await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), fsync: false })
    : null;
  const etcd = BACKENDS.includes('etcd') ? await startEtcd({ label: 'cpu-bench' }) : null;
  const servers: Server[] = [];
  try {
    let n = 0;
    for (const build of BUILDS) {
      for (const backend of BACKENDS) {
        const env: Record<string, string> =
          backend === 'pg'
            ? {
                LOCK_BACKEND: 'pg',
                LOCKDB_URL: await createMigratedDatabase(
                  pg!.adminUrl,
                  `lockdb_cpu_${n}`,
                  LOCKDB_MIGRATIONS,
                ),
                // The background probe (a statement a second) is not the pair's cost.
                LOCKDB_PROBE_INTERVAL_MS: '60000',
              }
            : { LOCK_BACKEND: 'etcd', ETCD_ENDPOINTS: etcd!.endpoints.join(',') };
        servers.push(await start(build, backend, env, n++));
      }
    }
    for (const s of servers) await pairs(s, WARMUP_PAIRS, await openSessions(s.url));
    const rows = new Map<Server, number[]>(servers.map((s) => [s, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const s of servers) {
        const us = await measure(s);
        rows.get(s)!.push(us);
        console.log(
          `[cpu] round ${round} ${s.backend} ${s.build}: ${us.toFixed(0)} µs/pair (load ${os.loadavg()[0].toFixed(2)})`,
        );
      }
    }
    console.log(`\n| backend | build | µs lock-server CPU per pair (median) | rounds |`);
    console.log('| --- | --- | ---: | --- |');
    for (const [s, us] of rows) {
      console.log(
        `| ${s.backend} | ${s.build} | ${median(us).toFixed(0)} | ${us.map((u) => u.toFixed(0)).join(', ')} |`,
      );
    }
    console.log(
      `\n${PAIRS} pairs per measurement, ${IN_FLIGHT} in flight, ${WARMUP_PAIRS} warm-up pairs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.stop();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
