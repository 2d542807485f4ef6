/**
 * One identity floods the lock-server with waiting acquires; what does another identity see?
 * (docs/lock-server.md, "Limits"). A real lock-server process on pg with its production limits,
 * real HTTP. The flooder holds HELD_KEYS keys on one session and sends FLOOD concurrent
 * acquires (waitMillis 8000) for them from another; meanwhile a quiet identity heartbeats its
 * session and takes and releases a key of its own, one call at a time. The same quiet calls are
 * timed first with nothing else running (idle), so the report reads as a ratio: the goal is the
 * quiet identity's heartbeat p50 within 2x of idle and none of its calls refused.
 *
 *   npm run build && npm run bench:lock:flood
 *   BENCH_FLOOD=1000 BENCH_FLOOD_ROUNDS=3 npm run bench:lock:flood
 *
 * Writes bench/reports/lock-server-flood.md.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LOCKDB_MIGRATIONS } from '../../migrations/lockdb';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { ROOT, call, machineLine, pct, sleep, startLockServerProcess } from './etcd-common';
import { loadGate, reportWithLoad } from '../load-gate';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const FLOOD = Number(process.env.BENCH_FLOOD ?? 1000);
const ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 3);
const HELD_KEYS = 20;
const WAIT_MS = 8_000;
/** Quiet calls per phase, one every GAP_MS: a heartbeat, then an acquire+release. */
const QUIET_CALLS = 60;
const GAP_MS = 50;
const REPORT =
  process.env.BENCH_FLOOD_REPORT ?? path.join(ROOT, 'bench', 'reports', 'lock-server-flood.md');

/** The lock-server's own defaults (apps/lock-server/src/config.ts), not the benches' raised caps. */
const PRODUCTION_LIMITS = {
  LOCK_WAITERS_MAX: '64',
  LOCK_WAITERS_PER_OWNER_MAX: '32',
  LOCK_WAITERS_TOTAL_MAX: '256',
  LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '64',
};

interface Quiet {
  heartbeatMs: number[];
  pairMs: number[];
  refused: string[];
}

interface Round {
  idle: Quiet;
  flooded: Quiet;
  floodAnswers: Record<string, number>;
}

async function startLockdb(): Promise<{ url: string; stop(): Promise<void> }> {
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', `bench-flood-${process.pid}`),
    fsync: true,
  });
  const url = await createMigratedDatabase(pg.adminUrl, 'lockdb_flood', LOCKDB_MIGRATIONS);
  return { url, stop: pg.stop };
}

async function session(base: string, owner: string): Promise<string> {
  const res = await call(base, 'POST', '/v1/sessions', {}, { ownerId: owner, ttlMillis: 60_000 });
  if (res.status !== 201) throw new Error(`session for ${owner}: ${res.status}`);
  return res.body.sessionId as string;
}

/**
 * The quiet identity's own connections, as a separate caller has: on the flood's shared agent
 * (256 sockets) its calls would queue in this process behind the flood's, and the report would
 * time that queue rather than the lock-server.
 */
const quietAgent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function acquire(
  base: string,
  key: string,
  sessionId: string,
  owner: string,
  waitMillis = 0,
  via?: http.Agent,
) {
  const body = { sessionId, ttlMillis: 30_000, waitMillis };
  const headers = { 'x-owner-id': owner };
  const path = `/v1/locks/${encodeURIComponent(key)}/acquire`;
  return call(base, 'POST', path, headers, body, 15_000, via);
}

/** The quiet identity's calls, timed one by one; anything but success is a refusal. */
async function quietCalls(base: string, sessionId: string, round: number): Promise<Quiet> {
  const out: Quiet = { heartbeatMs: [], pairMs: [], refused: [] };
  const headers = { 'x-owner-id': 'quiet' };
  for (let i = 0; i < QUIET_CALLS; i++) {
    let t = performance.now();
    const hb = await call(
      base,
      'POST',
      `/v1/sessions/${sessionId}/heartbeat`,
      headers,
      {},
      5_000,
      quietAgent,
    );
    out.heartbeatMs.push(performance.now() - t);
    if (hb.status !== 200) out.refused.push(`heartbeat ${hb.status} ${hb.body?.code ?? ''}`);
    const key = `quiet:${round}-${i}`;
    t = performance.now();
    const got = await acquire(base, key, sessionId, 'quiet', 0, quietAgent);
    const token = got.body?.fencingToken as string | undefined;
    const released =
      got.status === 200 && token !== undefined
        ? await call(
            base,
            'DELETE',
            `/v1/locks/${encodeURIComponent(key)}?sessionId=${sessionId}`,
            {
              ...headers,
              'x-fencing-token': token,
              'x-grant-proof': got.body.grantProof as string,
            },
            undefined,
            5_000,
            quietAgent,
          )
        : got;
    out.pairMs.push(performance.now() - t);
    if (released.status !== 204)
      out.refused.push(`pair ${released.status} ${released.body?.code ?? ''}`);
    await sleep(GAP_MS);
  }
  return out;
}

async function oneRound(base: string, round: number): Promise<Round> {
  const quiet = await session(base, 'quiet');
  const idle = await quietCalls(base, quiet, round * 2);
  const holder = await session(base, 'flood');
  for (let i = 0; i < HELD_KEYS; i++) {
    const held = await acquire(base, `flood:${round}-${i}`, holder, 'flood');
    if (held.status !== 200) throw new Error(`flood holder: ${held.status}`);
  }
  const waiter = await session(base, 'flood');
  const flood = Array.from({ length: FLOOD }, (_, i) =>
    acquire(base, `flood:${round}-${i % HELD_KEYS}`, waiter, 'flood', WAIT_MS),
  );
  const flooded = await quietCalls(base, quiet, round * 2 + 1);
  const floodAnswers: Record<string, number> = {};
  for (const r of await Promise.all(flood)) {
    const k = `${r.status} ${r.body?.code ?? ''}`.trim();
    floodAnswers[k] = (floodAnswers[k] ?? 0) + 1;
  }
  for (const id of [holder, waiter, quiet])
    await call(base, 'DELETE', `/v1/sessions/${id}`, {
      'x-owner-id': id === quiet ? 'quiet' : 'flood',
    });
  return { idle, flooded, floodAnswers };
}

const p = (xs: number[], q: number) =>
  pct(
    [...xs].sort((a, b) => a - b),
    q,
  );
const ms = (x: number) => x.toFixed(1);

function row(label: string, q: Quiet): string {
  return `| ${label} | ${ms(p(q.heartbeatMs, 50))} | ${ms(p(q.heartbeatMs, 99))} | ${ms(Math.max(...q.heartbeatMs))} | ${ms(p(q.pairMs, 50))} | ${ms(p(q.pairMs, 99))} | ${q.refused.length === 0 ? 'none' : q.refused.join(', ')} |`;
}

async function main(): Promise<void> {
  const gate = loadGate('lock-server flood');
  const db = await startLockdb();
  const server = await startLockServerProcess({
    LOCK_BACKEND: 'pg',
    LOCKDB_URL: db.url,
    ...PRODUCTION_LIMITS,
  });
  const rounds: Round[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      rounds.push(await oneRound(server.url, r));
      const last = rounds[rounds.length - 1];
      console.log(
        `[flood] round ${r + 1}: heartbeat p50 idle ${ms(p(last.idle.heartbeatMs, 50))} ms, ` +
          `flooded ${ms(p(last.flooded.heartbeatMs, 50))} ms; flood answers ${JSON.stringify(last.floodAnswers)}`,
      );
    }
  } finally {
    await server.stop();
    await db.stop();
  }
  const all = (pick: (r: Round) => Quiet): Quiet => ({
    heartbeatMs: rounds.flatMap((r) => pick(r).heartbeatMs),
    pairMs: rounds.flatMap((r) => pick(r).pairMs),
    refused: rounds.flatMap((r) => pick(r).refused),
  });
  const idle = all((r) => r.idle);
  const flooded = all((r) => r.flooded);
  const ratio = p(flooded.heartbeatMs, 50) / p(idle.heartbeatMs, 50);
  const text = [
    '# Lock-server: another identity under a flood of waiting acquires',
    '',
    machineLine(),
    `Command: \`BENCH_FLOOD=${FLOOD} BENCH_FLOOD_ROUNDS=${ROUNDS} npm run bench:lock:flood\` (pg backend, the lock-server's default waiter limits).`,
    `Workload: per round, one identity holds ${HELD_KEYS} keys and sends ${FLOOD} concurrent acquires with waitMillis ${WAIT_MS} for them; ` +
      `another makes ${QUIET_CALLS} heartbeats and ${QUIET_CALLS} acquire+release pairs, one call at a time, ${GAP_MS} ms apart, first with nothing else running, then during the flood.`,
    '',
    '| quiet identity | heartbeat p50 ms | p99 | max | acquire+release p50 ms | p99 | refused |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    row('idle', idle),
    row('during the flood', flooded),
    '',
    `Heartbeat p50 during the flood ÷ idle: **${ratio.toFixed(2)}×** (goal ≤ 2×).`,
    '',
    "The flood's answers, all rounds: " +
      Object.entries(
        rounds.reduce<Record<string, number>>((acc, r) => {
          for (const [k, v] of Object.entries(r.floodAnswers)) acc[k] = (acc[k] ?? 0) + v;
          return acc;
        }, {}),
      )
        .map(([k, v]) => `${v} × ${k}`)
        .join(', ') +
      '.',
    '',
  ].join('\n');
  writeFileSync(REPORT, reportWithLoad(gate, text));
  console.log(text);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
