import { setTimeout as sleep } from 'node:timers/promises';
/**
 * Lock-server benchmark (pg backend): acquire+release pairs per second and
 * latency percentiles, over HTTP through the real lock-server process and,
 * in the same run, as the raw SQL of the same acquire/release statements
 * against the same PostgreSQL (the backend's own ceiling).
 *
 *   npm run build && npm run bench:lock            # writes bench/reports/lock-server-pg.md
 *   BENCH_DURATION_MS=2000 npm run bench:lock      # shorter
 *   BENCH_ROUNDS=1 npm run bench:lock              # one round at concurrency 64 (default 3)
 *
 * A third side, the HTTP floor (floor-server.ts: node:http, no framework, the
 * same statements and a signed proof per grant), runs beside them at
 * concurrency 1 and 64: what any HTTP lock-server could reach on this machine.
 * BENCH_FLOOR=0 leaves it out.
 *
 * Starts its own embedded PostgreSQL (under .tmp/) and lock-server process.
 * Both load generators are lean and keep their connections: the HTTP side
 * uses one kept-alive socket per worker with a minimal HTTP/1.1 client (what
 * is measured is the server, not the SDK), the raw side one pg connection per
 * worker running the same prepared statements. Each row also
 * records the CPU the bench client, the lock-server and PostgreSQL spent per
 * pair, because all three share the machine's cores.
 * Text after the NOTES_MARKER line of an existing report is kept on rewrite.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import 'reflect-metadata';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { preparedStatement } from '../../libs/persistence/src/prepared';
import { cachedBearer } from '../../libs/testing/src/identity';
import { startLockServerProcess, machineLine } from './etcd-common';
import {
  ACQUIRE_SQL,
  OPEN_SESSION_SQL,
  RELEASE_SQL,
} from '../../apps/lock-server/src/locks/persistence/pg/pg-locks.sql';
import { loadGate, reportWithLoad } from '../load-gate';
import { notesOfFile } from '../report-notes';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);
const WARMUP_MS = 500;
const LEVELS = [1, 16, 64];
const GOAL_WORKERS = 64;
/** The lock-server's pairs/s at GOAL_WORKERS as a share of raw SQL's, and its acquire p50 alone as a multiple of raw SQL's. */
const RAW_SHARE_GOAL = 0.6;
const ALONE_P50_GOAL = 2;
/** The lock-server's pairs/s at GOAL_WORKERS as a share of the HTTP floor's (issue 54's goals table). */
const FLOOR_SHARE_GOAL = 0.85;
/** Alternating lock-server / raw SQL rounds at GOAL_WORKERS: the machine is shared and noisy. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONTENDERS = 16;
const LEASE_MS = 30_000;
/** Unset: the lock-server's own default (LOCKDB_POOL_MAX, 20). */
const POOL_MAX = process.env.BENCH_LOCKDB_POOL_MAX;
const REPORT = path.join(ROOT, 'bench', 'reports', 'lock-server-pg.md');
const WITH_FLOOR = process.env.BENCH_FLOOR !== '0';
const FLOOR_MAIN = path.join(__dirname, 'floor-server.js');

interface Postgres {
  url: string;
  /** The postmaster's pid (its children are the backends). */
  postmasterPid(): number | null;
  stop(): Promise<void>;
}

async function startPostgres(): Promise<Postgres> {
  // fsync on: the bench compares against the backend's real commit cost.
  const dir = path.join(ROOT, '.tmp', `bench-pg-${process.pid}`);
  const pg = await startEmbeddedPostgres({ dir, fsync: true });
  const port = pg.port;
  const admin = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  const url = await createMigratedDatabase(admin, 'lockdb_bench', LOCKDB_MIGRATIONS);
  return {
    url,
    postmasterPid() {
      try {
        const first = readFileSync(path.join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0];
        return Number(first) || null;
      } catch {
        return null;
      }
    },
    stop: pg.stop,
  };
}

interface LockServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startLockServer(dbUrl: string, main?: string): Promise<LockServer> {
  const server = await startLockServerProcess(
    {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: dbUrl,
      ...(POOL_MAX ? { LOCKDB_POOL_MAX: POOL_MAX } : {}),
    },
    main,
  );
  return { url: server.url, pid: server.proc.pid ?? 0, stop: server.stop };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); null elsewhere. */
const CLOCK_TICKS_PER_S = 100;
function processCpuS(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return null;
  }
}

/** CPU seconds used by the live children of `ppid` (PostgreSQL backends and workers). */
function childrenCpuS(ppid: number | null): Map<number, number> {
  const out = new Map<number, number>();
  if (ppid === null) return out;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== ppid) continue;
      out.set(Number(name), (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * A minimal keep-alive HTTP/1.1 client: one socket, one request in flight.
 * The load generator shares the CPUs with the lock-server and PostgreSQL, so
 * it must cost about what the raw side's pg client costs per pair, not the
 * several times more of node:http's client (measured: ~0.6 vs ~0.2 ms/pair).
 * The lock-server always answers with Content-Length (or 204).
 */
class KeepAliveConnection {
  private socket: net.Socket | null = null;
  private buffered: Buffer = Buffer.alloc(0);
  private pending: {
    resolve(r: { status: number; text: string }): void;
    reject(e: Error): void;
  } | null = null;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  private connect(): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, this.host, () => {
        socket.setNoDelay(true);
        resolve(socket);
      });
      const fail = (err: Error) => {
        this.socket = null;
        const pending = this.pending;
        this.pending = null;
        if (pending) pending.reject(err);
        else reject(err);
      };
      socket.on('error', fail);
      socket.on('close', () => fail(new Error('connection closed by the server')));
      socket.on('data', (chunk: Buffer) => {
        this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
        this.parse();
      });
      this.socket = socket;
    });
  }

  private parse(): void {
    if (!this.pending) return;
    const end = this.buffered.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buffered.toString('latin1', 0, end);
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length && status !== 204 && status !== 304) {
      this.pending.reject(new Error(`response without content-length: ${head}`));
      this.pending = null;
      return;
    }
    const bodyBytes = length ? Number(length[1]) : 0;
    if (this.buffered.length < end + 4 + bodyBytes) return;
    const text = this.buffered.toString('utf8', end + 4, end + 4 + bodyBytes);
    this.buffered = this.buffered.subarray(end + 4 + bodyBytes);
    const pending = this.pending;
    this.pending = null;
    pending.resolve({ status, text });
  }

  async request(
    method: string,
    pathname: string,
    headers: Record<string, string>,
    payload?: string,
  ): Promise<{ status: number; text: string }> {
    if (this.pending) throw new Error('one request at a time per connection');
    const socket = this.socket ?? (await this.connect());
    let head = `${method} ${pathname} HTTP/1.1\r\nhost: ${this.host}:${this.port}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    if (payload !== undefined) {
      head += `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
    }
    head += '\r\n';
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      socket.write(payload === undefined ? head : head + payload);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }
}

/** One kept-alive connection per bench worker (owner id). */
class Connections {
  private readonly byOwner = new Map<string, KeepAliveConnection>();
  private readonly host: string;
  private readonly port: number;

  constructor(base: string) {
    const url = new URL(base);
    this.host = url.hostname;
    this.port = Number(url.port);
  }

  async call(
    owner: string,
    method: string,
    pathname: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<{ status: number; body: any }> {
    let connection = this.byOwner.get(owner);
    if (!connection) {
      connection = new KeepAliveConnection(this.host, this.port);
      this.byOwner.set(owner, connection);
    }
    const res = await connection.request(
      method,
      pathname,
      headers,
      body === undefined ? undefined : JSON.stringify(body),
    );
    return { status: res.status, body: res.text ? JSON.parse(res.text) : undefined };
  }

  closeAll(): void {
    for (const connection of this.byOwner.values()) connection.close();
    this.byOwner.clear();
  }
}

/** One side's acquire/release, so both sides run the same loop. */
interface Side {
  name: 'lock-server' | 'raw SQL' | 'HTTP floor';
  prepare(workers: number): Promise<void>;
  session(owner: string): Promise<string>;
  /** Resolves with the token when granted, null when contended. */
  acquire(key: string, session: string, owner: string, wait: boolean): Promise<string | null>;
  release(key: string, session: string, token: string, owner: string): Promise<void>;
  finish(): Promise<void>;
}

function httpSide(base: string, name: 'lock-server' | 'HTTP floor' = 'lock-server'): Side {
  const connections = new Connections(base);
  // Each worker's token, minted when its session opens and sent on every call (docs/security.md).
  const tokens = new Map<string, string>();
  const auth = (owner: string) => tokens.get(owner)!;
  // Each grant's proof, sent back with its release (docs/security.md, "Signed grants").
  const proofs = new Map<string, string>();
  return {
    name,
    prepare: async () => undefined,
    async session(owner) {
      tokens.set(owner, await cachedBearer(owner, 'lock-server'));
      const res = await connections.call(
        owner,
        'POST',
        '/v1/sessions',
        { authorization: auth(owner) },
        { ownerId: owner, ttlMillis: 60_000 },
      );
      return res.body.sessionId as string;
    },
    async acquire(key, session, owner, wait) {
      const res = await connections.call(
        owner,
        'POST',
        `/v1/locks/${key}/acquire`,
        { 'x-owner-id': owner, authorization: auth(owner) },
        {
          sessionId: session,
          ttlMillis: LEASE_MS,
          waitMillis: wait ? 10_000 : 0,
        },
      );
      if (res.status === 200) {
        proofs.set(key, res.body.grantProof as string);
        return res.body.fencingToken as string;
      }
      if (res.status === 409) return null;
      throw new Error(`acquire: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async release(key, session, token, owner) {
      const res = await connections.call(owner, 'DELETE', `/v1/locks/${key}?sessionId=${session}`, {
        'x-owner-id': owner,
        'x-fencing-token': token,
        'x-grant-proof': proofs.get(key)!,
        authorization: auth(owner),
      });
      if (res.status !== 204) throw new Error(`release: ${res.status}`);
    },
    finish: async () => connections.closeAll(),
  };
}

function sqlSide(dbUrl: string): Side {
  let pool: Pool | null = null;
  return {
    name: 'raw SQL',
    async prepare(workers) {
      // One connection per worker: the database's own ceiling for this concurrency.
      // The same prepared statements the lock-server runs, so the ratio compares like with like.
      pool = new Pool({ connectionString: dbUrl, max: workers });
    },
    async session(owner) {
      const r = await pool!.query(preparedStatement(OPEN_SESSION_SQL, [owner, 60_000]));
      return r.rows[0].session_id as string;
    },
    async acquire(key, session, owner) {
      const r = await pool!.query(preparedStatement(ACQUIRE_SQL, [key, session, owner, LEASE_MS]));
      return r.rows[0].outcome === 'granted' ? (r.rows[0].fencing_token as string) : null;
    },
    async release(key, _session, token) {
      const r = await pool!.query(preparedStatement(RELEASE_SQL, [key, token]));
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
  /** CPU ms per measured pair: bench client, lock-server process, PostgreSQL backends. */
  clientCpuMs: number;
  serverCpuMs: number;
  pgCpuMs: number;
  /** 1-min load average when the row started. */
  load: number;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Where the CPU goes while a row runs (all three share the machine). */
interface CpuProbe {
  serverPid: number | null;
  postmasterPid(): number | null;
}

function cpuSnapshot(probe: CpuProbe) {
  return {
    client: process.cpuUsage(),
    server: probe.serverPid === null ? null : processCpuS(probe.serverPid),
    pg: childrenCpuS(probe.postmasterPid()),
  };
}

function cpuSince(probe: CpuProbe, before: ReturnType<typeof cpuSnapshot>) {
  const client = process.cpuUsage(before.client);
  const serverNow = probe.serverPid === null ? null : processCpuS(probe.serverPid);
  let pgS = 0;
  for (const [pid, now] of childrenCpuS(probe.postmasterPid()))
    pgS += now - (before.pg.get(pid) ?? 0);
  return {
    clientS: (client.user + client.system) / 1e6,
    serverS: serverNow === null || before.server === null ? NaN : serverNow - before.server,
    pgS,
  };
}

async function run(
  side: Side,
  scenario: string,
  workers: number,
  sharedKey: string | null,
  probe: CpuProbe,
): Promise<Result> {
  await side.prepare(workers);
  const sessions = await Promise.all(
    Array.from({ length: workers }, (_, i) => side.session(`bench-${i}`)),
  );
  const acquireMs: number[] = [];
  const pairMs: number[] = [];
  const load = os.loadavg()[0];
  const start = performance.now();
  const measureFrom = start + WARMUP_MS;
  const stopAt = measureFrom + DURATION_MS;
  let pairs = 0;
  let allPairs = 0;
  const tag = `${side.name.replace(/[^a-z]/gi, '')}-${scenario.replace(/[^a-z0-9]/gi, '')}-${Math.round(start)}`;
  const cpuBefore = cpuSnapshot(probe);
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
        allPairs++;
        if (t0 >= measureFrom && t2 <= stopAt) {
          acquireMs.push(t1 - t0);
          pairMs.push(t2 - t0);
          pairs++;
        }
      }
    }),
  );
  // Before finish(): the raw side's backends exit when its pool closes.
  const cpu = cpuSince(probe, cpuBefore);
  await side.finish();
  acquireMs.sort((a, b) => a - b);
  pairMs.sort((a, b) => a - b);
  const perPairMs = (seconds: number) => (allPairs > 0 ? (seconds * 1000) / allPairs : NaN);
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
    clientCpuMs: perPairMs(cpu.clientS),
    serverCpuMs: perPairMs(cpu.serverS),
    pgCpuMs: perPairMs(cpu.pgS),
    load,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The floor's rows beside the goal: how far the same work over bare node:http gets. */
function floorLines(
  servers: Result[],
  raws: Result[],
  floors: Result[],
  alone: (side: string) => Result | undefined,
): string[] {
  if (floors.length === 0) return [];
  const pc = (n: number) => `${(n * 100).toFixed(0)} %`;
  const ofRaw = floors.map((s, i) => s.pairsPerSec / raws[i].pairsPerSec);
  const serverOfFloor = servers.map((s, i) => s.pairsPerSec / floors[i].pairsPerSec);
  const p50 = alone('HTTP floor')?.acquireP50 ?? NaN;
  const rawP50 = alone('raw SQL')?.acquireP50 ?? NaN;
  return [
    `- the HTTP floor (bench/lock-server/floor-server.ts: node:http, no framework, the same statements, a signed proof per grant) / raw SQL pairs/s, per round: ${ofRaw.map(pc).join(', ')}; median ${pc(median(ofRaw))}: the share any HTTP lock-server could reach on this machine`,
    `- the lock-server / the HTTP floor, per round: ${serverOfFloor.map(pc).join(', ')}; median ${pc(median(serverOfFloor))} (goal >= ${pc(FLOOR_SHARE_GOAL)}): ${median(serverOfFloor) >= FLOOR_SHARE_GOAL ? 'met' : 'NOT met'}; server CPU per pair, medians: lock-server ${median(servers.map((r) => r.serverCpuMs)).toFixed(2)} ms, floor ${median(floors.map((r) => r.serverCpuMs)).toFixed(2)} ms`,
    `- the floor's acquire p50 at concurrency 1: ${p50.toFixed(2)} ms, ${(p50 / rawP50).toFixed(2)} × raw SQL's`,
  ];
}

function report(results: Result[], seconds: number): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.side} | ${r.workers} | ${r.pairs} | ${r.pairsPerSec.toFixed(0)} | ${f(r.acquireP50)} | ${f(r.acquireP99)} | ${f(r.pairP50)} | ${f(r.pairP99)} | ${f(r.clientCpuMs)} | ${f(r.serverCpuMs)} | ${f(r.pgCpuMs)} | ${r.load.toFixed(1)} |`,
  );
  const atGoal = (side: string) =>
    results.filter(
      (r) =>
        r.scenario.startsWith('distinct keys') && r.workers === GOAL_WORKERS && r.side === side,
    );
  const servers = atGoal('lock-server');
  const raws = atGoal('raw SQL');
  const ratios = servers.map((s, i) => s.pairsPerSec / raws[i].pairsPerSec);
  const ratio = median(ratios);
  const p99 = median(servers.map((s) => s.acquireP99));
  const rawP99 = median(raws.map((s) => s.acquireP99));
  const serverPairs = median(servers.map((s) => s.pairsPerSec));
  const alone = (side: string) =>
    results.find((r) => r.scenario === 'distinct keys' && r.workers === 1 && r.side === side);
  const p50Alone =
    (alone('lock-server')?.acquireP50 ?? NaN) / (alone('raw SQL')?.acquireP50 ?? NaN);
  return [
    '# Lock-server benchmark (PostgreSQL backend)',
    '',
    'Acquire+release pairs over HTTP through the lock-server process, and the same',
    'acquire/release statements (`apps/lock-server/src/locks/persistence/pg/pg-locks.sql.ts`) sent as raw SQL',
    'to the same PostgreSQL in the same run. Latencies in milliseconds, measured by the',
    `client; ${DURATION_MS / 1000} s measured per row after ${WARMUP_MS} ms warm-up.`,
    `Concurrency ${GOAL_WORKERS} on distinct keys runs ${ROUNDS} alternating round(s); the goal uses their medians.`,
    '',
    `- command: \`npm run build && npm run bench:lock\`${process.env.BENCH_DURATION_MS ? ` (BENCH_DURATION_MS=${process.env.BENCH_DURATION_MS})` : ''}${process.env.BENCH_ROUNDS ? ` (BENCH_ROUNDS=${ROUNDS})` : ''}`,
    `- machine: ${machineLine()}`,
    `- PostgreSQL: embedded-postgres (fsync on, defaults) on the same machine; lock-server pool ${POOL_MAX ?? 'default (LOCKDB_POOL_MAX 20)'}, LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'warn'}; raw SQL: one connection per worker, the same named prepared statements as the lock-server`,
    '- clients: lock-server side one kept-alive HTTP/1.1 connection per worker (a minimal client), raw SQL side one pg connection per worker',
    '- the load generator, the lock-server and PostgreSQL share the same CPUs with whatever else runs (per row: the load column, the bench itself included)',
    `- contention: ${CONTENDERS} workers on one key; lock-server waits server-side (waitMillis), raw SQL retries after 1 ms`,
    '- CPU columns: milliseconds of CPU per pair (warm-up included) spent by the bench process, the lock-server process and the PostgreSQL backends, from /proc',
    `- total wall time: ${seconds.toFixed(0)} s`,
    '',
    '| scenario | side | workers | pairs | pairs/s | acquire p50 | acquire p99 | pair p50 | pair p99 | client CPU | server CPU | pg CPU | load |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `## Goal at concurrency ${GOAL_WORKERS}, distinct keys`,
    '',
    `- lock-server / raw SQL pairs/s, per round: ${ratios.map((r) => `${(r * 100).toFixed(0)} %`).join(', ')}; median ${(ratio * 100).toFixed(0)} % (goal >= ${RAW_SHARE_GOAL * 100} %): ${ratio >= RAW_SHARE_GOAL ? 'met' : 'NOT met'}`,
    `- acquire p50 at concurrency 1: ${f(alone('lock-server')?.acquireP50 ?? NaN)} ms, ${f(p50Alone)} × raw SQL's ${f(alone('raw SQL')?.acquireP50 ?? NaN)} ms (goal within ${ALONE_P50_GOAL} ×): ${p50Alone <= ALONE_P50_GOAL ? 'met' : 'NOT met'}`,
    ...floorLines(servers, raws, atGoal('HTTP floor'), alone),
    `- lock-server acquire p99, median of rounds: ${f(p99)} ms (goal < 20 ms): ${p99 < 20 ? 'met' : 'NOT met'}; raw SQL itself: ${f(rawP99)} ms`,
    `- a closed loop of ${GOAL_WORKERS} workers keeps ${GOAL_WORKERS} pairs in flight, so its mean pair time is ${GOAL_WORKERS} / pairs/s: ${f((GOAL_WORKERS / serverPairs) * 1000)} ms at the lock-server's median ${serverPairs.toFixed(0)} pairs/s. A p99 acquire under 20 ms needs a mean pair well under 40 ms, i.e. more than ${(GOAL_WORKERS / 0.04).toFixed(0)} pairs/s; raw SQL reached at most ${Math.max(...raws.map((r) => r.pairsPerSec)).toFixed(0)} here`,
    '',
    notesOfFile(REPORT),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:lock');
  const began = performance.now();
  console.log('[bench] starting embedded PostgreSQL and the lock-server ...');
  const pg = await startPostgres();
  let server: LockServer | null = null;
  let floor: LockServer | null = null;
  try {
    server = await startLockServer(pg.url);
    floor = WITH_FLOOR ? await startLockServer(pg.url, FLOOR_MAIN) : null;
    const results: Result[] = [];
    const sides = [httpSide(server.url), sqlSide(pg.url)];
    if (floor) sides.push(httpSide(floor.url, 'HTTP floor'));
    const pids = { 'lock-server': server.pid, 'HTTP floor': floor?.pid ?? null, 'raw SQL': null };
    const probeFor = (side: Side): CpuProbe => ({
      serverPid: pids[side.name],
      postmasterPid: () => pg.postmasterPid(),
    });
    const runRow = async (side: Side, scenario: string, workers: number, key: string | null) => {
      const r = await run(side, scenario, workers, key, probeFor(side));
      console.log(
        `[bench] ${scenario} c=${workers} ${side.name}: ${r.pairsPerSec.toFixed(0)} pairs/s, acquire p99 ${r.acquireP99.toFixed(2)} ms, cpu ms/pair client ${r.clientCpuMs.toFixed(2)} server ${r.serverCpuMs.toFixed(2)} pg ${r.pgCpuMs.toFixed(2)}, load ${r.load.toFixed(1)}`,
      );
      results.push(r);
    };
    for (const workers of LEVELS) {
      const rounds = workers === GOAL_WORKERS ? ROUNDS : 1;
      for (let round = 1; round <= rounds; round++) {
        // Only the first round's rows read as 'distinct keys' (etcd-bench.ts copies those).
        const scenario = round === 1 ? 'distinct keys' : `distinct keys, round ${round}`;
        for (const side of sides) await runRow(side, scenario, workers, null);
      }
    }
    // The floor has no server-side wait: it is measured on distinct keys only.
    for (const side of sides.filter((s) => s.name !== 'HTTP floor'))
      await runRow(side, 'one key', CONTENDERS, 'bench:hot');
    const text = report(results, (performance.now() - began) / 1000);
    mkdirSync(path.dirname(REPORT), { recursive: true });
    writeFileSync(REPORT, reportWithLoad(gate, text));
    console.log(text);
    console.log(`[bench] report written to ${path.relative(ROOT, REPORT)}`);
  } finally {
    await floor?.stop();
    await server?.stop();
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error('[bench] failed:', err);
  process.exit(1);
});
