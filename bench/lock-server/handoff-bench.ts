/**
 * Hand-off latency across replicas (docs/lock-server.md, "Waits"): three
 * lock-server processes on one backend; a holder on one replica, a waiting
 * acquire (waitMillis) on another; the time from the release's answer to the
 * waiter's grant. The poll is set to 5 s, so only the backend's own wake-up
 * (pg: LISTEN/NOTIFY; etcd: a watch) can hand over fast. Both backends, the
 * replicas taken in turn.
 *
 *   npm run build && npm run bench:lock:handoff
 *   BENCH_HANDOFF_ROUNDS=200 BENCH_BACKENDS=pg npm run bench:lock:handoff
 *
 * Writes bench/reports/lock-server-handoff.md.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { startEtcdCluster } from '../../libs/testing/src/etcd';
import {
  ROOT,
  call,
  machineLine,
  pct,
  startLockServerProcess,
  type LockServerProcess,
} from './etcd-common';
import { loadGate, reportWithLoad } from '../load-gate';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROUNDS = Number(process.env.BENCH_HANDOFF_ROUNDS ?? 100);
const REPLICAS = 3;
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'pg,etcd').split(',');
const POLL_MS = '5000';
const REPORT =
  process.env.BENCH_HANDOFF_REPORT ?? path.join(ROOT, 'bench', 'reports', 'lock-server-handoff.md');

interface Result {
  backend: string;
  handOffsMs: number[];
  failures: number;
}

/** A fresh lockdb on an embedded PostgreSQL: its url and how to stop it. */
async function startLockdb(): Promise<{ url: string; stop(): Promise<void> }> {
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', `bench-handoff-${process.pid}`),
    fsync: true,
  });
  const url = await createMigratedDatabase(pg.adminUrl, 'lockdb_handoff', LOCKDB_MIGRATIONS);
  return { url, stop: pg.stop };
}

async function session(url: string, owner: string): Promise<string> {
  const res = await call(url, 'POST', '/v1/sessions', {}, { ownerId: owner, ttlMillis: 60_000 });
  if (res.status !== 201) throw new Error(`session: ${res.status}`);
  return res.body.sessionId as string;
}

/** One hand-off from replica `from` to replica `to`: ms from the release's answer to the grant. */
async function handOff(
  from: string,
  to: string,
  round: number,
  sessions: { holder: string; waiter: string },
): Promise<number | null> {
  const key = `payout:handoff-${round}`;
  const held = await call(
    from,
    'POST',
    `/v1/locks/${key}/acquire`,
    { 'x-owner-id': 'holder' },
    {
      sessionId: sessions.holder,
      ttlMillis: 30_000,
    },
  );
  if (held.status !== 200) return null;
  const waiting = call(
    to,
    'POST',
    `/v1/locks/${key}/acquire`,
    { 'x-owner-id': 'waiter' },
    {
      sessionId: sessions.waiter,
      waitMillis: 10_000,
    },
    15_000,
  );
  // Let the waiter be waiting (and announced) before the release.
  await new Promise((r) => setTimeout(r, 150));
  const released = await call(from, 'DELETE', `/v1/locks/${key}`, {
    'x-owner-id': 'holder',
    'x-fencing-token': held.body.fencingToken,
    'x-grant-proof': held.body.grantProof,
  });
  const releasedAt = performance.now();
  const got = await waiting;
  if (released.status !== 204 || got.status !== 200) return null;
  const ms = performance.now() - releasedAt;
  await call(to, 'DELETE', `/v1/locks/${key}`, {
    'x-owner-id': 'waiter',
    'x-fencing-token': got.body.fencingToken,
    'x-grant-proof': got.body.grantProof,
  });
  return ms;
}

async function runBackend(backend: string): Promise<Result> {
  const stops: Array<() => Promise<void>> = [];
  const replicas: LockServerProcess[] = [];
  try {
    let env: Record<string, string>;
    if (backend === 'pg') {
      const db = await startLockdb();
      stops.push(db.stop);
      env = { LOCK_BACKEND: 'pg', LOCKDB_URL: db.url };
    } else {
      const etcd = await startEtcdCluster({ members: 3, label: 'bench-handoff' });
      stops.push(() => etcd.stop());
      env = { LOCK_BACKEND: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(',') };
    }
    for (let i = 0; i < REPLICAS; i++)
      replicas.push(await startLockServerProcess({ ...env, LOCK_WAIT_POLL_MS: POLL_MS }));
    const urls = replicas.map((r) => r.url);
    const holders = await Promise.all(urls.map((u) => session(u, 'holder')));
    const waiters = await Promise.all(urls.map((u) => session(u, 'waiter')));
    const handOffsMs: number[] = [];
    let failures = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const a = round % REPLICAS;
      const b = (a + 1 + (round % (REPLICAS - 1))) % REPLICAS;
      const ms = await handOff(urls[a], urls[b], round, { holder: holders[a], waiter: waiters[b] });
      if (ms === null) failures++;
      else handOffsMs.push(ms);
    }
    return { backend, handOffsMs, failures };
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    for (const stop of stops.reverse()) await stop();
  }
}

async function main(): Promise<void> {
  const gate = loadGate('bench:lock:handoff');
  const results: Result[] = [];
  for (const backend of BACKENDS) {
    console.log(`[handoff] ${backend}: ${REPLICAS} replicas, ${ROUNDS} hand-offs ...`);
    results.push(await runBackend(backend));
  }
  const rows = results.map((r) => {
    const s = [...r.handOffsMs].sort((x, y) => x - y);
    const f = (v: number) => v.toFixed(1);
    return `| ${r.backend} | ${s.length} | ${r.failures} | ${f(pct(s, 50))} | ${f(pct(s, 99))} | ${f(s[s.length - 1] ?? NaN)} |`;
  });
  const text = [
    '# Lock hand-off across replicas',
    '',
    `- machine: ${machineLine()}`,
    `- command: \`BENCH_HANDOFF_ROUNDS=${ROUNDS} npm run bench:lock:handoff\``,
    `- load: ${REPLICAS} lock-server replicas per backend (pg: embedded PostgreSQL, fsync on; etcd: 3 members on loopback), one hand-off at a time, holder and waiter on different replicas in turn; LOCK_WAIT_POLL_MS=${POLL_MS}, so a hand-off faster than 5 s is the backend's wake-up (pg LISTEN/NOTIFY, etcd watch)`,
    '- measured: from the release answering 204 on one replica to the waiting acquire answering 200 on another',
    '',
    '| backend | hand-offs | failed | p50 ms | p99 ms | max ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ].join('\n');
  writeFileSync(REPORT, reportWithLoad(gate, text));
  console.log(text);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
