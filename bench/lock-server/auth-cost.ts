/**
 * The cost of service identity at the lock-server (issue 16; bench/reports/auth-cost.md):
 * acquire+release pairs per second at concurrency 64 and the lock-server's CPU per pair,
 * for a build of the commit before identity landed ("base", no authentication) and this
 * build (JWT on every request, per-identity limit, the authorisation policy guard with
 * deploy/policy/dev-policy.yaml, executor identities locking `payout:*` keys), run side by
 * side against one PostgreSQL and interleaved round by round (base, this, base, this, …)
 * so a shared machine's load falls on both alike.
 *
 *   git worktree add /tmp/authz-base <commit before libs/identity>; (cd /tmp/authz-base &&
 *     ln -s <repo>/node_modules && node scripts/build.js)
 *   BENCH_BASE_DIR=/tmp/authz-base npm run bench:lock:auth
 *   BENCH_ROUNDS=6 BENCH_DURATION_MS=8000 (the defaults)
 *   BENCH_BASE_AUTH=1 for a base that already authenticates (to isolate a later change)
 *   BENCH_SUBJECT_DIR=<built worktree>: compare against that build instead of this one
 *     (e.g. the commit that added authentication against its parent)
 *   BENCH_CPU_PROF_DIR=<dir>: both lock-servers write a V8 CPU profile there when they
 *     stop (summarise with dist/bench/lock-server/profile-by-package.js)
 *
 * A pair that fails (a 503 under load, a timeout) is counted as an error, not a pair.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import 'reflect-metadata';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { DEV_POLICY_PATH, testAuthEnv } from '../../libs/testing/src/identity';
import { freePort } from '../../libs/testing/src/process';
import { call, cpuProfileEnv, startLockServerProcess } from './etcd-common';
import { loadGate, loadLine, markNoisy } from '../load-gate';
import { createMigratedDatabase, type MigrationList } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BASE_DIR = process.env.BENCH_BASE_DIR ?? '/tmp/authz-base';
const SUBJECT_DIR = process.env.BENCH_SUBJECT_DIR;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 6));
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const WARMUP_MS = 1000;
const WORKERS = 64;
const CLOCK_TICK_MS = 10;
/** Both servers alike: a loaded shared machine needs more than the 1.5 s / 1 s defaults. */
const DB_TIMEOUTS = { LOCKDB_STATEMENT_TIMEOUT_MS: '5000', LOCKDB_CONNECT_TIMEOUT_MS: '5000' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Server {
  name: 'base' | 'identity';
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** utime + stime of a process, in ms (Linux /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/** A lock-server from another build's dist/ (the base, or BENCH_SUBJECT_DIR). */
/** A build's own development policy, or this one's for a build that has none. */
function policyOf(dir: string): string {
  const own = path.join(dir, 'deploy', 'policy', 'dev-policy.yaml');
  return existsSync(own) ? own : DEV_POLICY_PATH;
}

async function startBuild(
  dir: string,
  name: Server['name'],
  dbUrl: string,
  auth: boolean,
): Promise<Server> {
  const port = await freePort();
  const proc = spawn(process.execPath, [path.join(dir, 'dist', 'apps', 'lock-server', 'main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      LOCK_WAITERS_MAX: '1000',
      LOCK_WAITERS_PER_OWNER_MAX: '1000',
      LOCK_WAITERS_TOTAL_MAX: '1000',
      LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '100000',
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: dbUrl,
      ...DB_TIMEOUTS,
      ...cpuProfileEnv(),
      // A build that authenticates trusts the tests' issuer, under its own development
      // policy (a policy names only the operations its build knows; a build before the
      // policy file ignores AUTH_POLICY).
      ...(auth ? { ...(await testAuthEnv()), AUTH_POLICY: policyOf(dir) } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    const ok = await fetch(`${url}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`${name} did not start`);
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  return { name, url, proc, stop };
}

async function migrationsOf(dir: string): Promise<MigrationList> {
  const built = (await import(path.join(dir, 'dist', 'migrations', 'lockdb', 'index.js'))) as {
    LOCKDB_MIGRATIONS: MigrationList;
  };
  return built.LOCKDB_MIGRATIONS;
}

interface Round {
  round: number;
  side: Server['name'];
  pairsPerSec: number;
  serverCpuMsPerPair: number;
  errors: number;
  /** `acquire/release` status × count of the failed pairs. */
  errorStatuses: string;
  load1: number;
}

/** The pairs and failures the workers count while `measuring`; `stop` ends their loops. */
interface Tally {
  measuring: boolean;
  stop: boolean;
  pairs: number;
  errors: number;
  statuses: Map<string, number>;
}

/** One closed-loop round: WORKERS executors, each acquiring and releasing its own payout key. */
async function runRound(server: Server, round: number): Promise<Round> {
  const owners = Array.from({ length: WORKERS }, (_, i) => `executor-bench-${i}`);
  const sessions = await openSessions(server, owners);
  const tally: Tally = { measuring: false, stop: false, pairs: 0, errors: 0, statuses: new Map() };
  const running = owners.map((owner, i) =>
    acquireReleaseLoop(server, owner, `payout:bench-${round}-${i}`, sessions[i], tally),
  );
  await sleep(WARMUP_MS);
  const load1 = os.loadavg()[0];
  const cpuBefore = cpuMs(server.proc.pid!);
  tally.measuring = true;
  const began = Date.now();
  await sleep(DURATION_MS);
  tally.measuring = false;
  const elapsedMs = Date.now() - began;
  const cpu = cpuMs(server.proc.pid!) - cpuBefore;
  tally.stop = true;
  await Promise.all(running);
  await Promise.all(
    sessions.map((sid, i) =>
      call(server.url, 'DELETE', `/v1/sessions/${sid}`, { 'x-owner-id': owners[i] }),
    ),
  );
  const { pairs } = tally;
  return {
    round,
    side: server.name,
    pairsPerSec: (pairs * 1000) / elapsedMs,
    serverCpuMsPerPair: pairs > 0 ? cpu / pairs : NaN,
    errors: tally.errors,
    errorStatuses: [...tally.statuses].map(([k, n]) => `${k}×${n}`).join(' '),
    load1,
  };
}

/** One session per owner, one at a time, again after a 503: a loaded machine times out a burst of 64 opens. */
async function openSessions(server: Server, owners: string[]): Promise<string[]> {
  const sessions: string[] = [];
  for (const ownerId of owners) {
    for (let attempt = 1; ; attempt++) {
      const res = await call(
        server.url,
        'POST',
        '/v1/sessions',
        {},
        { ownerId, ttlMillis: 60_000 },
      );
      if (res.status === 201) {
        sessions.push(res.body.sessionId as string);
        break;
      }
      if (attempt >= 20) throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
      await sleep(200);
    }
  }
  return sessions;
}

/** One worker: acquire and release `key` until stopped, counting pairs and failures. */
async function acquireReleaseLoop(
  server: Server,
  owner: string,
  key: string,
  sessionId: string,
  tally: Tally,
): Promise<void> {
  while (!tally.stop) {
    const h = { 'x-owner-id': owner };
    const got = await call(server.url, 'POST', `/v1/locks/${key}/acquire`, h, {
      sessionId,
      ttlMillis: 30_000,
    });
    const token = got.status === 200 ? (got.body.fencingToken as string) : undefined;
    const freed =
      token === undefined
        ? undefined
        : await call(server.url, 'DELETE', `/v1/locks/${key}`, {
            ...h,
            'x-fencing-token': token,
            // A build before signed grants answers none and asks none.
            ...(typeof got.body.grantProof === 'string'
              ? { 'x-grant-proof': got.body.grantProof }
              : {}),
          });
    if (freed?.status === 204) {
      if (tally.measuring) tally.pairs++;
    } else {
      if (tally.measuring) {
        tally.errors++;
        const what = `${got.status}${freed ? `/${freed.status}` : ''}`;
        tally.statuses.set(what, (tally.statuses.get(what) ?? 0) + 1);
      }
      await sleep(50);
    }
  }
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:lock:auth');
  const dir = path.join(ROOT, '.tmp', `auth-cost-pg-${process.pid}`);
  const pg = await startEmbeddedPostgres({ dir, fsync: true, maxConnections: 300 });
  const servers: Server[] = [];
  try {
    const dbUrl = (name: string) => `postgres://postgres:postgres@127.0.0.1:${pg.port}/${name}`;
    // Each build's own schema, from its own build.
    await createMigratedDatabase(pg.adminUrl, 'lockdb_base', await migrationsOf(BASE_DIR));
    await createMigratedDatabase(
      pg.adminUrl,
      'lockdb_identity',
      SUBJECT_DIR ? await migrationsOf(SUBJECT_DIR) : LOCKDB_MIGRATIONS,
    );
    servers.push(
      await startBuild(BASE_DIR, 'base', dbUrl('lockdb_base'), process.env.BENCH_BASE_AUTH === '1'),
    );
    if (SUBJECT_DIR) {
      servers.push(await startBuild(SUBJECT_DIR, 'identity', dbUrl('lockdb_identity'), true));
    } else {
      const after = await startLockServerProcess({
        LOCK_BACKEND: 'pg',
        LOCKDB_URL: dbUrl('lockdb_identity'),
        AUTH_POLICY: DEV_POLICY_PATH,
        ...DB_TIMEOUTS,
      });
      servers.push({ name: 'identity', url: after.url, proc: after.proc, stop: after.stop });
    }
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const server of servers) {
        const r = await runRound(server, round);
        rounds.push(r);
        console.log(
          `| ${r.round} | ${r.side} | ${r.pairsPerSec.toFixed(0)} | ${r.serverCpuMsPerPair.toFixed(2)} | ${r.errors} ${r.errorStatuses} | ${r.load1.toFixed(1)} |`,
        );
      }
    }
    for (const side of ['base', 'identity'] as const) {
      const mine = rounds.filter((r) => r.side === side);
      console.log(
        `median ${side}: ${median(mine.map((r) => r.pairsPerSec)).toFixed(0)} pairs/s, ${median(mine.map((r) => r.serverCpuMsPerPair)).toFixed(2)} server cpu ms/pair`,
      );
    }
    console.log(markNoisy(gate, loadLine(gate)));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error('[auth-cost] failed:', err);
  process.exit(1);
});
