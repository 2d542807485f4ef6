/**
 * Lock-server benchmark, etcd backend (issue 9): acquire+release pairs per
 * second and latency percentiles at concurrency 1/16/64 on distinct keys,
 * over HTTP through the real lock-server process on LOCK_BACKEND=etcd, and in
 * the same run the same etcd operations sent straight through etcd3 (the
 * backend's own ceiling), plus the minimal one-txn-each-way pair for
 * reference. With BENCH_WITH_PG=1 (default) the PostgreSQL benchmark
 * (bench.ts) runs first in the same invocation and its rows are included.
 *
 *   npm run build && node dist/bench/lock-server/etcd-bench.js
 *   BENCH_DURATION_MS=2000 BENCH_WITH_PG=0 node dist/bench/lock-server/etcd-bench.js
 *
 * Writes bench/reports/lock-server-etcd.md (the failover section comes from
 * failover-bench.ts: bench/reports/lock-server-etcd-failover.md).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Etcd3 } from 'etcd3';
import { startEtcd } from '../../libs/testing/src/etcd';
import {
  DATA_ROOT,
  ROOT,
  agent,
  call,
  machineLine,
  pct,
  sleep,
  startEtcdLockServer,
} from './etcd-common';
import { loadGate, reportWithLoad } from '../load-gate';
import { NOTES_MARKER, writeKeepingNotes } from '../report-notes';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 4000);
const WARMUP_MS = 500;
const LEVELS = [1, 16, 64];
const LEASE_MS = 30_000;
/** The lock-server's pairs/s at 64 as a share of the same operations through etcd3 (issue 54's goals table). */
const RAW_SHARE_GOAL = 0.65;
const WITH_PG = (process.env.BENCH_WITH_PG ?? '1') === '1';
const REPORT = path.join(ROOT, 'bench', 'reports', 'lock-server-etcd.md');
const PG_REPORT = path.join(ROOT, 'bench', 'reports', 'lock-server-pg.md');
const FAILOVER_REPORT = path.join(ROOT, 'bench', 'reports', 'lock-server-etcd-failover.md');

interface Side {
  name: string;
  session(owner: string): Promise<string>;
  /** The token, or null when contended (never expected on distinct keys). */
  acquire(key: string, session: string, owner: string): Promise<string | null>;
  release(key: string, session: string, token: string, owner: string): Promise<void>;
}

function httpSide(base: string): Side {
  // Each grant's proof, sent back with its release (docs/security.md, "Signed grants").
  const proofs = new Map<string, string>();
  return {
    name: 'lock-server (etcd)',
    async session(owner) {
      const res = await call(
        base,
        'POST',
        '/v1/sessions',
        {},
        { ownerId: owner, ttlMillis: 60_000 },
      );
      if (res.status !== 201) throw new Error(`session: ${res.status}`);
      return res.body.sessionId as string;
    },
    async acquire(key, session, owner) {
      const res = await call(
        base,
        'POST',
        `/v1/locks/${key}/acquire`,
        { 'x-owner-id': owner },
        {
          sessionId: session,
          ttlMillis: LEASE_MS,
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
      const res = await call(base, 'DELETE', `/v1/locks/${key}?sessionId=${session}`, {
        'x-owner-id': owner,
        'x-fencing-token': token,
        'x-grant-proof': proofs.get(key)!,
      });
      if (res.status !== 204) throw new Error(`release: ${res.status}`);
    },
  };
}

const b = (s: string) => Buffer.from(s);

/** The backend's etcd operations (etcd-lock-store.ts), issued directly. */
function rawSameOpsSide(client: Etcd3, prefix: string): Side {
  return {
    name: 'raw etcd3, same ops',
    async session(owner) {
      const id = randomUUID();
      const lease = await client.leaseClient.leaseGrant({ TTL: 60, ID: 0 });
      await client.kv.put({ key: b(`${prefix}session/${id}`), value: b(owner), lease: lease.ID });
      return id;
    },
    async acquire(key, session, owner) {
      const lease = await client.leaseClient.leaseGrant({ TTL: LEASE_MS / 1000, ID: 0 });
      const lockKey = b(`${prefix}lock/${key}`);
      const res = await client.kv.txn({
        compare: [
          { key: lockKey, target: 'Create', result: 'Equal', create_revision: 0 },
          {
            key: b(`${prefix}session/${session}`),
            target: 'Create',
            result: 'Greater',
            create_revision: 0,
          },
        ],
        success: [
          {
            request_put: {
              key: lockKey,
              value: b(
                JSON.stringify({ ownerId: owner, sessionId: session, acquiredAtMs: Date.now() }),
              ),
              lease: lease.ID,
            },
          },
          {
            request_put: {
              key: b(`${prefix}session-lock/${session}/${key}`),
              value: b(JSON.stringify({ expiresAtMs: Date.now() + LEASE_MS })),
              lease: lease.ID,
            },
          },
          { request_put: { key: b(`${prefix}seen/${key}`), value: Buffer.alloc(0) } },
        ],
        failure: [{ request_range: { key: lockKey } }],
      });
      if (!res.succeeded) {
        await client.leaseClient.leaseRevoke({ ID: lease.ID });
        return null;
      }
      return res.header.revision;
    },
    async release(key, session, token) {
      const lockKey = b(`${prefix}lock/${key}`);
      const res = await client.kv.txn({
        compare: [{ key: lockKey, target: 'Mod', result: 'Equal', mod_revision: token }],
        success: [
          { request_delete_range: { key: lockKey, prev_kv: true } },
          { request_delete_range: { key: b(`${prefix}session-lock/${session}/${key}`) } },
          { request_range: { key: b(`${prefix}session/${session}`) } },
        ],
        failure: [],
      });
      const prev = res.responses[0]?.response_delete_range?.prev_kvs[0];
      // Both keys of the grant's lease are gone: the lease is left to its TTL, as the store does.
      if (!res.succeeded || !prev) throw new Error('raw release matched nothing');
    },
  };
}

/** The least etcd can do for a fenced lock: one txn to create, one to delete. */
function rawMinimalSide(client: Etcd3, prefix: string): Side {
  return {
    name: 'raw etcd3, 1 txn each way',
    session: async () => randomUUID(),
    async acquire(key, session) {
      const lockKey = b(`${prefix}lock/${key}`);
      const res = await client.kv.txn({
        compare: [{ key: lockKey, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: lockKey, value: b(session) } }],
        failure: [],
      });
      return res.succeeded ? res.header.revision : null;
    },
    async release(key, _session, token) {
      const lockKey = b(`${prefix}lock/${key}`);
      const res = await client.kv.txn({
        compare: [{ key: lockKey, target: 'Mod', result: 'Equal', mod_revision: token }],
        success: [{ request_delete_range: { key: lockKey } }],
        failure: [],
      });
      if (!res.succeeded) throw new Error('raw release matched nothing');
    },
  };
}

interface Result {
  side: string;
  workers: number;
  pairs: number;
  pairsPerSec: number;
  acquireP50: number;
  acquireP99: number;
  pairP50: number;
  pairP99: number;
}

async function run(side: Side, workers: number, tag: string): Promise<Result> {
  const sessions = await Promise.all(
    Array.from({ length: workers }, (_, i) => side.session(`bench-${i}`)),
  );
  const acquireMs: number[] = [];
  const pairMs: number[] = [];
  const measureFrom = performance.now() + WARMUP_MS;
  const stopAt = measureFrom + DURATION_MS;
  let pairs = 0;
  await Promise.all(
    sessions.map(async (session, i) => {
      const owner = `bench-${i}`;
      const key = `bench:${tag}:${i}`;
      while (performance.now() < stopAt) {
        const t0 = performance.now();
        let token = await side.acquire(key, session, owner);
        while (token === null) {
          await sleep(1);
          token = await side.acquire(key, session, owner);
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
  acquireMs.sort((x, y) => x - y);
  pairMs.sort((x, y) => x - y);
  return {
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

/** The distinct-key rows of the pg report written by bench.ts in this same invocation. */
function pgRows(): string[] {
  if (!existsSync(PG_REPORT)) return [];
  return readFileSync(PG_REPORT, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('| distinct keys |'))
    .map((l) => {
      const cells = l.split('|').map((c) => c.trim());
      // | scenario | side | workers | pairs | pairs/s | acq p50 | acq p99 | pair p50 | pair p99 |
      const side = cells[2] === 'lock-server' ? 'lock-server (pg)' : `pg ${cells[2]}`;
      return `| ${side} | ${cells[3]} | ${cells[4]} | ${cells[5]} | ${cells[6]} | ${cells[7]} | ${cells[8]} | ${cells[9]} |`;
    });
}

function report(results: Result[], seconds: number, withPg: boolean): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '-');
  const rows = results.map(
    (r) =>
      `| ${r.side} | ${r.workers} | ${r.pairs} | ${r.pairsPerSec.toFixed(0)} | ${f(r.acquireP50)} | ${f(r.acquireP99)} | ${f(r.pairP50)} | ${f(r.pairP99)} |`,
  );
  const at64 = (side: string) => results.find((r) => r.workers === 64 && r.side === side)!;
  const server = at64('lock-server (etcd)');
  const same = at64('raw etcd3, same ops');
  const minimal = at64('raw etcd3, 1 txn each way');
  const ratio = server.pairsPerSec / same.pairsPerSec;
  const failover = existsSync(FAILOVER_REPORT)
    ? readFileSync(FAILOVER_REPORT, 'utf8')
        .split(NOTES_MARKER)[0]
        .replace(/^# .*\n/, '## Leader kill (failover-bench.ts)\n')
        .concat('\nHow to read it, and earlier runs: bench/reports/lock-server-etcd-failover.md.\n')
    : '## Leader kill\n\nnot run: `node dist/bench/lock-server/failover-bench.js`\n';
  return [
    '# Lock-server benchmark (etcd backend)',
    '',
    'Acquire+release pairs on distinct keys over HTTP through the lock-server process',
    '(LOCK_BACKEND=etcd), and in the same run the same etcd operations sent straight',
    'through the etcd3 client (lease grant, create txn; delete txn taking the index entry',
    "and reading the session: the backend's ceiling), plus the minimal fenced pair (one",
    `create txn, one delete txn) for reference. Latencies in ms, client-side; ${DURATION_MS / 1000} s`,
    `measured per row after ${WARMUP_MS} ms warm-up.`,
    '',
    `- command: \`npm run build && node dist/bench/lock-server/etcd-bench.js\`${process.env.BENCH_DURATION_MS ? ` (BENCH_DURATION_MS=${process.env.BENCH_DURATION_MS})` : ''}; then \`node dist/bench/lock-server/failover-bench.js\` for the failover section`,
    `- machine: ${machineLine()}`,
    '- etcd 3.4.23 (Debian etcd-server), one member on loopback, default timing, fsync on; the load generator, the lock-server, etcd and (pg rows) PostgreSQL share the CPUs',
    withPg
      ? '- pg rows: `bench.ts` run first in the same invocation (its full report: lock-server-pg.md)'
      : '- pg rows: not run (BENCH_WITH_PG=0)',
    `- total wall time: ${seconds.toFixed(0)} s`,
    '',
    '| side | workers | pairs | pairs/s | acquire p50 | acquire p99 | pair p50 | pair p99 |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...(withPg ? pgRows() : []),
    ...rows,
    '',
    '## Goal at concurrency 64',
    '',
    `- lock-server (etcd) / raw etcd3 same ops: ${(ratio * 100).toFixed(0)} % (goal >= ${RAW_SHARE_GOAL * 100} %): ${ratio >= RAW_SHARE_GOAL ? 'met' : 'NOT met'}`,
    `- lock-server (etcd) / raw etcd3 one txn each way: ${((server.pairsPerSec / minimal.pairsPerSec) * 100).toFixed(0)} % (what the lease per grant and the session index cost on top of etcd's floor)`,
    '',
    failover,
  ].join('\n');
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:lock:etcd');
  const began = performance.now();
  if (WITH_PG) {
    console.log('[etcd-bench] running the pg benchmark first (bench.js) ...');
    execFileSync(process.execPath, [path.join(__dirname, 'bench.js')], {
      stdio: 'inherit',
      env: process.env,
    });
  }
  console.log('[etcd-bench] starting etcd and the lock-server ...');
  const etcd = await startEtcd({
    heartbeatMs: 100,
    electionMs: 1_000,
    label: 'bench-etcd',
    dataRoot: DATA_ROOT,
  });
  const client = new Etcd3({ hosts: etcd.endpoints });
  let server: Awaited<ReturnType<typeof startEtcdLockServer>> | null = null;
  try {
    server = await startEtcdLockServer(etcd.endpoints, { ETCD_KEY_PREFIX: 'dlock/' });
    const results: Result[] = [];
    const sides = [
      httpSide(server.url),
      rawSameOpsSide(client, 'rawsame/'),
      rawMinimalSide(client, 'rawmin/'),
    ];
    for (const workers of LEVELS) {
      for (const side of sides) {
        const r = await run(side, workers, `${side.name.replace(/[^a-z0-9]/gi, '')}-${workers}`);
        console.log(
          `[etcd-bench] c=${workers} ${side.name}: ${r.pairsPerSec.toFixed(0)} pairs/s, pair p50 ${r.pairP50.toFixed(2)} p99 ${r.pairP99.toFixed(2)} ms`,
        );
        results.push(r);
      }
    }
    const text = report(results, (performance.now() - began) / 1000, WITH_PG);
    writeKeepingNotes(REPORT, reportWithLoad(gate, text));
    console.log(text);
    console.log(`[etcd-bench] report written to ${path.relative(ROOT, REPORT)}`);
  } finally {
    agent.destroy();
    client.close();
    await server?.stop();
    await etcd.stop();
  }
}

main().catch((err: unknown) => {
  console.error('[etcd-bench] failed:', err);
  process.exit(1);
});
