/**
 * Stack bench (issue 28): what one request costs in each layer of each
 * service, measured by taking the layers out one at a time on the real app
 * (ablate.ts) and counting the service's instructions (callgrind) or CPU
 * time per request, same request, same process (bench/reports/stack-cost.md).
 *
 *   npm run build && npm run bench:stack                       # CPU µs per request, 3 rounds
 *   BENCH_STACK_MODE=callgrind npm run bench:stack             # instructions per request (slow)
 *   BENCH_STACK_SERVICES=rail-stub,floor BENCH_STACK_N=200 …   # some services, fewer requests
 *   BENCH_STACK_JSON=.tmp/before.json …                        # keep the raw rows
 *   BENCH_STACK_BEFORE=.tmp/before.json …                      # add a before column from those
 *   BENCH_STACK_REPORT=.tmp/stack.md …                         # report elsewhere
 *
 * Starts its own embedded PostgreSQL (under .tmp/) and every process it
 * measures; stops them all at the end. One request in flight at a time.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import 'reflect-metadata';
import { MIGRATIONS, type DatabaseName } from '../../migrations';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../libs/testing/src/embedded-postgres';
import { testAppAuthEnv } from '../../libs/testing/src/identity';
import { SERVICE_LAYERS, STATIC_VARIANTS } from './layers';
import { renderReport, type Row } from './report';
import {
  floorBatch,
  lockServerBatch,
  paymentResourceBatch,
  railProxyBatch,
  railStubBatch,
  type Batch,
} from './scenarios';
import { startService, type Service } from './service';
import { loadGate, markNoisy } from '../load-gate';
import { HttpTransport } from '../../libs/http-client/src/transport';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DIST = path.join(ROOT, 'dist');
const CALLGRIND = process.env.BENCH_STACK_MODE === 'callgrind';
const N = Number(process.env.BENCH_STACK_N ?? (CALLGRIND ? 100 : 400));
const ROUNDS = Number(process.env.BENCH_STACK_ROUNDS ?? 3);
/**
 * Iterations before anything is counted. V8 goes on optimising for a long
 * time: under callgrind the execution's own instructions per request only
 * level off after a thousand or more requests (measured: a bare node:http
 * server, 262k per request after 300, 103k after 2000 and 3000).
 */
const WARMUP_REQUESTS = Number(process.env.BENCH_STACK_WARMUP ?? (CALLGRIND ? 3000 : 1000));
/** After a layer switch, before counting (uninstrumented): the JIT settles on the new path. */
const REWARM = Number(process.env.BENCH_STACK_REWARM ?? (CALLGRIND ? 200 : 50));
/** Requests per iteration of each service's batch (its routes), to size the warm-up in requests. */
const ROUTES: Record<string, number> = { 'lock-server': 2, 'payment-resource': 4 };
const warmup = (service: string) => Math.ceil(WARMUP_REQUESTS / (ROUTES[service] ?? 1));
const SERVICES = (
  process.env.BENCH_STACK_SERVICES ?? 'floor,rail-stub,lock-server,payment-resource,rail-proxy'
)
  .split(',')
  .filter(Boolean);
/** 0 leaves out the start-up-only variants (async-context, otel-export). */
const STATIC = process.env.BENCH_STACK_STATIC !== '0';
/**
 * The bench's own calls wait this many times their hop budget (and say so in
 * X-Request-Deadline-Ms): under callgrind a service runs some 50 times slower.
 */
const TIMEOUT_SCALE = Number(process.env.BENCH_STACK_TIMEOUT_SCALE ?? (CALLGRIND ? 50 : 1));
const REPORT = path.join(ROOT, process.env.BENCH_STACK_REPORT ?? 'bench/reports/stack-cost.md');

interface Env {
  pg: EmbeddedPg;
  urls: Record<DatabaseName, string>;
  /** The bench's own directory, removed at its end. */
  dir: string;
  callgrindDir?: string;
}

async function database(pg: EmbeddedPg, db: DatabaseName): Promise<string> {
  return createMigratedDatabase(pg.adminUrl, `${db}_stack`, MIGRATIONS[db]);
}

function main_(app: string): string {
  return app === 'floor'
    ? path.join(DIST, 'bench', 'stack', 'floor.js')
    : path.join(DIST, 'apps', app, 'main.js');
}

/** Starts `app` (with `extra` env) and the batch that drives it; `stop` ends both and any helper. */
async function launch(
  env: Env,
  app: string,
  extra: Record<string, string>,
  name = app,
): Promise<{ svc: Service; batch: Batch; stop(): Promise<void> }> {
  const auth = await testAppAuthEnv('bench-worker');
  const helpers: Service[] = [];
  const appEnv: Record<string, string> = { ...auth, OTEL_TRACES_EXPORTER: 'none', ...extra };
  if (app === 'lock-server') {
    // The background probe (a statement a second by default) is not the request's cost.
    Object.assign(appEnv, {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: env.urls.lockdb,
      LOCKDB_PROBE_INTERVAL_MS: '60000',
    });
  }
  if (app === 'payment-resource') appEnv.PAYDB_URL = env.urls.paydb;
  if (app === 'rail-stub' || app === 'rail-proxy') {
    // Not the stub's default journal under the system's temp dir: nothing outlives the bench.
    appEnv.RAIL_STUB_JOURNAL_PATH = path.join(env.dir, `${name}-journal.jsonl`);
    appEnv.RAIL_STUB_JOURNAL_FSYNC = 'false';
  }
  if (app === 'rail-proxy') {
    const rail = await startService({ name: 'rail', main: main_('rail-stub'), env: appEnv });
    helpers.push(rail);
    Object.assign(appEnv, { PROXYDB_URL: env.urls.proxydb, RAIL_STUB_URL: rail.url });
    // Under callgrind the proxy's own connect to the rail takes far longer than its 1 s default.
    if (CALLGRIND)
      Object.assign(appEnv, { RAIL_CONNECT_TIMEOUT_MS: '30000', RAIL_READ_TIMEOUT_MS: '100000' });
  }
  const svc = await startService({
    name,
    main: main_(app),
    env: appEnv,
    callgrindDir: env.callgrindDir,
  });
  const batches: Record<string, () => Batch> = {
    floor: () => floorBatch(svc.url),
    'rail-stub': () => railStubBatch(svc.url),
    'lock-server': () => lockServerBatch(svc.url),
    'payment-resource': () => paymentResourceBatch(svc.url, env.urls.paydb),
    'rail-proxy': () => railProxyBatch(svc.url),
  };
  return {
    svc,
    batch: batches[app](),
    stop: async () => {
      await svc.stop();
      await Promise.all(helpers.map((h) => h.stop()));
    },
  };
}

async function runBatch(batch: Batch, n: number): Promise<void> {
  for (const phase of await batch(n)) await phase.run();
}

function statementDelta(a: Record<string, number>, b: Record<string, number>, n: number) {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d > 0) out[k] = d / n;
  }
  return out;
}

/** One variant: every phase of a fresh batch of N, each counted on its own. */
async function measure(
  svc: Service,
  batch: Batch,
  service: string,
  variant: string,
  round: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const phase of await batch(N)) {
    await svc.zero();
    const before = await svc.stats();
    await phase.run();
    const after = await svc.stats();
    const ir = await svc.instructions();
    rows.push({
      service,
      phase: phase.name,
      variant,
      round,
      cpuUs: (after.cpuUs - before.cpuUs) / N,
      instructions: ir === null ? null : (ir.total - ir.jit) / N,
      jitInstructions: ir === null ? null : ir.jit / N,
      statements: statementDelta(before.statements, after.statements, N),
    });
    console.log(
      `[stack] ${service} ${phase.name} [${variant}] #${round}: ${rows[rows.length - 1].cpuUs.toFixed(0)} µs` +
        (ir === null
          ? ''
          : `, ${Math.round((ir.total - ir.jit) / N)} instructions (+${Math.round(ir.jit / N)} JIT)`) +
        ' per request',
    );
  }
  return rows;
}

/**
 * Each layer off alone, then all of them off, each right after a baseline of its own (A B
 * pairs, the same re-warm before both); ROUNDS times, interleaved.
 */
async function ablation(env: Env, service: string): Promise<Row[]> {
  const layers = SERVICE_LAYERS[service] ?? [];
  type Variant = { name: string; off: readonly string[]; pairedWith?: string };
  const ablated: Variant[] = [
    ...layers.map((l) => ({ name: l, off: [l] })),
    ...(layers.length > 1 ? [{ name: 'all', off: layers }] : []),
  ];
  const variants: Variant[] = ablated.length
    ? ablated.flatMap((v) => [{ name: 'baseline', off: [], pairedWith: v.name }, v])
    : [{ name: 'baseline', off: [] }];
  const { svc, batch, stop } = await launch(env, service, {});
  const rows: Row[] = [];
  try {
    await runBatch(batch, warmup(service));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const v of variants) {
        await svc.instrument(false);
        await svc.set(v.off);
        await runBatch(batch, REWARM);
        await svc.instrument(true);
        const measured = await measure(svc, batch, service, v.name, round);
        rows.push(...measured.map((r) => ({ ...r, pairedWith: v.pairedWith })));
      }
    }
  } finally {
    await stop();
  }
  return rows;
}

/** A start-up-only variant (or a floor app): its own process, measured as it is. */
async function single(
  env: Env,
  app: string,
  service: string,
  variant: string,
  extra: Record<string, string>,
): Promise<Row[]> {
  const { svc, batch, stop } = await launch(env, app, extra, `${service} [${variant}]`);
  const rows: Row[] = [];
  try {
    await runBatch(batch, warmup(service));
    for (let round = 1; round <= ROUNDS; round++) {
      await svc.instrument(false);
      await runBatch(batch, REWARM);
      await svc.instrument(true);
      rows.push(...(await measure(svc, batch, service, variant, round)));
    }
  } finally {
    await stop();
  }
  return rows;
}

async function measureService(env: Env, service: string): Promise<Row[]> {
  if (service === 'floor') {
    const rows: Row[] = [];
    for (const floor of ['http', 'express', 'nest', 'fastify', 'nest-fastify']) {
      rows.push(...(await single(env, 'floor', 'floor', floor, { BENCH_FLOOR: floor })));
    }
    return rows;
  }
  const rows = await ablation(env, service);
  if (!STATIC) return rows;
  for (const v of STATIC_VARIANTS) rows.push(...(await single(env, service, service, v.id, v.env)));
  return rows;
}

function scaleTimeouts(): void {
  if (TIMEOUT_SCALE === 1) return;
  const proto = HttpTransport.prototype as any;
  const exchange = proto.exchange;
  proto.exchange = function (request: { connectTimeoutMs: number; readTimeoutMs: number }) {
    return exchange.call(this, {
      ...request,
      connectTimeoutMs: request.connectTimeoutMs * TIMEOUT_SCALE,
      readTimeoutMs: Math.min(3_600_000, request.readTimeoutMs * TIMEOUT_SCALE),
    });
  };
}

async function main(): Promise<void> {
  // CPU time follows the machine's other load (bench/load-gate.ts); callgrind's instruction
  // counts do not, so a callgrind run may share the machine.
  const gate = CALLGRIND ? null : loadGate('bench:stack');
  scaleTimeouts();
  const started = Date.now();
  const loadBefore = os.loadavg();
  const tmp = path.join(ROOT, '.tmp', `bench-stack-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  const pg = await startEmbeddedPostgres({ dir: path.join(tmp, 'pg'), fsync: false });
  const rows: Row[] = [];
  try {
    const urls = {
      lockdb: await database(pg, 'lockdb'),
      paydb: await database(pg, 'paydb'),
      proxydb: await database(pg, 'proxydb'),
    };
    const callgrindDir = CALLGRIND ? path.join(tmp, 'callgrind') : undefined;
    if (callgrindDir) mkdirSync(callgrindDir, { recursive: true });
    for (const service of SERVICES)
      rows.push(...(await measureService({ pg, urls, dir: tmp, callgrindDir }, service)));
  } finally {
    await pg.stop();
  }
  if (process.env.BENCH_STACK_JSON) {
    writeFileSync(path.resolve(ROOT, process.env.BENCH_STACK_JSON), JSON.stringify(rows));
  }
  const before = process.env.BENCH_STACK_BEFORE;
  const beforeRows = before
    ? (JSON.parse(readFileSync(path.resolve(ROOT, before), 'utf8')) as Row[])
    : undefined;
  const report = renderReport({
    rows,
    before: beforeRows,
    callgrind: CALLGRIND,
    n: N,
    rounds: ROUNDS,
    warmup: WARMUP_REQUESTS,
    rewarm: REWARM,
    loadBefore,
    loadAfter: os.loadavg(),
    seconds: Math.round((Date.now() - started) / 1000),
    env: Object.entries(process.env)
      .filter(([k]) => k.startsWith('BENCH_STACK_'))
      .map(([k, v]) => `${k}=${v}`),
    previous: existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : '',
  });
  writeFileSync(REPORT, gate ? markNoisy(gate, report) : report);
  rmSync(tmp, { recursive: true, force: true });
  console.log(`[stack] wrote ${path.relative(ROOT, REPORT)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
