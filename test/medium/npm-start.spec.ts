import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listenerOwners, portListening, sleep, waitFor, withClient } from '@dlock/testing';
import {
  freePortBlock,
  killLeftovers,
  npmStart as startRun,
  printed as printedWithin,
  processesOf,
  stubSeedWhere,
  type StartRun,
} from './support/npm-start-run';

/**
 * `npm start` as a user runs it, stopped the way a terminal stops it: a signal
 * to its whole process group (Ctrl-C is SIGINT to the foreground group), at
 * several moments of the start-up and while payouts flow (issues 29 and 32;
 * README, "Stopping"). Each time the stop wins: nothing starts after it,
 * `[dlock] stopped.` is the last line, and by then no process of the run is
 * left and none of its ports listens. Every process of a run carries a marker
 * in its environment, so the test finds them without asking the supervisor.
 */
jest.setTimeout(180_000);

/** The supervisor's stop deadline is 20 s a tier; the slow rail call in flight ends within 15 s. */
const GONE_WITHIN_MS = 45_000;
const READY_WITHIN_MS = 150_000;
/** Executor ports: base + 3 for the first (scripts/start.mjs); one executor here. */
const SERVICE_OFFSETS = [0, 1, 2, 3, 4, 5, 9];

let stateDir: string;
let pgPort: number;
let portBase: number;
let stubSeed: number;
/** A seed with no slow call and no fault among the first calls: a stop that waits on no rail call. */
let quickStubSeed: number;
const runs: StartRun[] = [];
/** The Ctrl-C test's second start, which the up-and-running test goes on with. */
let next: StartRun | undefined;

const runPorts = () => [pgPort, ...SERVICE_OFFSETS.map((o) => portBase + o)];
const adminUrl = (db: string) => `postgres://postgres:postgres@127.0.0.1:${pgPort}/${db}`;

/** `npm start` with one executor, no feed and 40 seeded payouts, remembered for the clean-up. */
function npmStart(seed = stubSeed): StartRun {
  const run = startRun({
    DLOCK_STATE_DIR: stateDir,
    DLOCK_PG_PORT: String(pgPort),
    DLOCK_PORT_BASE: String(portBase),
    DLOCK_EXECUTORS: '1',
    DLOCK_FEED_RATE: '0',
    DLOCK_SEED_ACCOUNTS: '10',
    DLOCK_SEED_PAYOUTS: '40',
    RAIL_STUB_SEED: String(seed),
  });
  runs.push(run);
  return run;
}

const printed = (run: StartRun, line: RegExp) => printedWithin(run, line, READY_WITHIN_MS);

async function leftovers(run: StartRun) {
  const listening: number[] = [];
  for (const port of runPorts()) if (await portListening(port)) listening.push(port);
  return { processes: processesOf(run).map((p) => `${p.pid} ${p.cmd}`), listening };
}

/** Within the deadline nothing of the run is left: no process, no listening port. */
async function expectAllGone(run: StartRun, since: number): Promise<void> {
  let last = await leftovers(run);
  while (last.processes.length + last.listening.length > 0 && Date.now() - since < GONE_WITHIN_MS) {
    await sleep(200);
    last = await leftovers(run);
  }
  if (last.processes.length + last.listening.length > 0) {
    // Each port still listening with its holders (pid, state, command), read once, and the
    // supervisor's own account of the stop (a member that outlived SIGKILL says so there).
    const holders = await Promise.all(
      last.listening.map(async (port) => `${port}: ${(await listenerOwners(port)).join('; ')}`),
    );
    const left = { processes: last.processes, listening: holders };
    throw new Error(
      `left after the stop: ${JSON.stringify(left, null, 2)}\n--- output:\n${run.output()}`,
    );
  }
}

/** What a stop must print: the stop line, nothing started after it, `stopped.` last. */
function expectOrderlyOutput(out: string): void {
  const lines = out.split('\n').filter((l) => l.trim() !== '');
  // The stop says what it waits for (README, "Stopping"): the order, then each tier by name.
  const stopAt = lines.findIndex((l) => l.startsWith('[dlock] stopping: the workers first'));
  expect(stopAt).toBeGreaterThanOrEqual(0);
  const after = lines.slice(stopAt + 1);
  expect({
    startedAfterStop: after.filter((l) => / http:\/\/|^\[dlock\] (feed|up\.)/.test(l)),
    last: after[after.length - 1],
  }).toEqual({
    startedAfterStop: [],
    last: `[dlock] stopped. State kept in ${stateDir}/ (npm start -- --reset to wipe).`,
  });
}

/** The run's group gets `signal`; npm ends as its script did (0) or by that same signal. */
async function signalGroup(run: StartRun, signal: NodeJS.Signals): Promise<number> {
  const sentAt = Date.now();
  process.kill(-run.npm.pid!, signal);
  const end = await run.exited;
  expect(end.code === 0 || end.signal === signal ? 'clean' : end).toBe('clean');
  return sentAt;
}

/** Sends `signal` to the run's process group once `line` is printed; checks the whole stop. */
async function stopAt(line: RegExp, signal: NodeJS.Signals): Promise<{ sentAt: number }> {
  const run = npmStart();
  await printed(run, line);
  const sentAt = await signalGroup(run, signal);
  expectOrderlyOutput(run.output());
  await expectAllGone(run, sentAt);
  return { sentAt };
}

beforeAll(async () => {
  stateDir = mkdtempSync(path.join(tmpdir(), 'dlock-npm-start-'));
  pgPort = await freePortBlock(1);
  portBase = await freePortBlock(10);
  /**
   * A seed whose first 1000 calls hold none of the stub's own faults (each a RAIL_AMBIGUOUS by
   * design) and whose first or second call is slow (15 s): any RAIL_AMBIGUOUS this test sees
   * comes from the stop, and a payout is at the rail when it begins.
   */
  stubSeed = stubSeedWhere(
    1_000,
    (calls) => calls.slice(0, 2).some((c) => c.slow) && calls.every((c) => c.fate.kind !== 'fail'),
  );
  // The 40 seeded payouts are 40 calls; a later slow call would only make the stop slower.
  quickStubSeed = stubSeedWhere(100, (calls) =>
    calls.every((c) => !c.slow && c.fate.kind !== 'fail'),
  );
});

afterAll(() => {
  // Whatever a failed test left, then the state directory.
  for (const run of runs) killLeftovers(run);
  rmSync(stateDir, { recursive: true, force: true });
});

describe.each(['SIGINT', 'SIGTERM'] as const)(
  'npm start stopped by %s to its process group during start-up (issue 32)',
  (signal) => {
    it('before the database is up: nothing is started after it, nothing is left', async () => {
      await stopAt(/starting PostgreSQL on/, signal);
    });

    it('between the services and the workers: the wait for readiness ends, nothing is left', async () => {
      await stopAt(/\[dlock\] rail-proxy +http:/, signal);
    });
  },
);

/** Payouts at the rail now, by id. */
async function atTheRail(): Promise<string[]> {
  const { rows } = await withClient(adminUrl('paydb'), (c) =>
    c.query<{ id: string }>(`SELECT payout_id AS id FROM payout WHERE state = 'RAIL_SUBMITTED'`),
  );
  return rows.map((r) => r.id);
}

function logsSaying(text: string): string[] {
  const dir = path.join(stateDir, 'logs');
  return readdirSync(dir).filter((f) => readFileSync(path.join(dir, f), 'utf8').includes(text));
}

/** Files and directories under the state directory (PostgreSQL's own left out) not owner-only. */
function notOwnerOnly(): string[] {
  const wrong: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (p === path.join(stateDir, 'pg')) continue;
      const mode = statSync(p).mode & 0o777;
      if (mode !== (e.isDirectory() ? 0o700 : 0o600))
        wrong.push(`${mode.toString(8)} ${path.relative(stateDir, p)}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(stateDir);
  return wrong;
}

/** The in-flight payout's transitions up to the stop, and the payouts the stop quarantined. */
function recordOfTheStop(inFlight: string, sentAt: number, stoppedAt: number) {
  return withClient(adminUrl('paydb'), async (c) => {
    const until = new Date(stoppedAt);
    const history = await c.query<{ to_state: string }>(
      `SELECT to_state FROM payout_transition
        WHERE payout_id = $1 AND created_at <= $2 ORDER BY transition_id`,
      [inFlight, until],
    );
    const quarantined = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM payout_transition
        WHERE to_state = 'RAIL_AMBIGUOUS' AND created_at >= $1 AND created_at <= $2`,
      [new Date(sentAt - 1_000), until],
    );
    return { states: history.rows.map((r) => r.to_state), quarantined: quarantined.rows[0].n };
  });
}

/** The reconciler's database sessions once it holds both: by role and database. */
const reconcilerSessions = () =>
  waitFor(
    () =>
      withClient(adminUrl('postgres'), async (c) => {
        // A session still authenticating has no role yet (PostgreSQL 18 lists it, usename NULL).
        const { rows } = await c.query<{ role: string; db: string }>(
          `SELECT DISTINCT usename AS role, datname AS db FROM pg_stat_activity
            WHERE application_name = 'reconciler' AND usename IS NOT NULL ORDER BY 2`,
        );
        const dbs = rows.map((r) => r.db);
        return dbs.includes('paydb') && dbs.includes('proxydb') ? rows : null;
      }),
    30_000,
    "the reconciler's database sessions",
  );

// Two runs on one state directory: the first stopped by Ctrl-C with a slow rail call in flight,
// the second (whose stop waits on no rail call) reads the first's record, and is itself the
// run that is up and running, then stopped by SIGTERM to its group. One boot serves both.
describe('npm start stopped by Ctrl-C while payouts flow (issue 29), then up again (issues 27 and 32)', () => {
  it('stops the workers first, then the services, then the database: the payout at the rail settles, none is quarantined', async () => {
    const run = npmStart();
    await printed(run, /\[dlock\] up\./);
    // The stub's first or second call answers after 15 s (chooseStubSeed): that payout stays at the rail.
    const inFlight = await waitFor(
      async () => {
        const first = await atTheRail();
        if (first.length === 0) return null;
        await sleep(1_000);
        const still = await atTheRail();
        return first.find((id) => still.includes(id)) ?? null;
      },
      60_000,
      'a payout at the rail',
    );
    const sentAt = await signalGroup(run, 'SIGINT');
    const stoppedAt = Date.now();
    expectOrderlyOutput(run.output());
    // What the stop waits for, said while it waits: the payout at the rail, then each tier.
    expect(run.output()).toMatch(
      /^\[dlock\] draining the payouts in flight \(.*RAIL_SUBMITTED=\d/m,
    );
    expect(run.output()).toMatch(/^\[dlock\] stopping executor-1, .*reconciler.* \.\.\.$/m);
    expect(run.output()).toContain('\n[dlock] stopping postgres ...\n');
    await expectAllGone(run, sentAt);

    // What an older run left readable to others, for the next start to make owner-only.
    chmodSync(stateDir, 0o755);
    const oldLog = path.join(stateDir, 'logs', 'lock-server.log');
    if (existsSync(oldLog)) chmodSync(oldLog, 0o644);
    else writeFileSync(oldLog, '', { mode: 0o644 });
    next = npmStart(quickStubSeed);
    // The record, read from the next start as soon as its database is up: what happened by the stop.
    await printed(next, /\[dlock\] PostgreSQL on 127\.0\.0\.1/);
    const record = await recordOfTheStop(inFlight, sentAt, stoppedAt);
    expect({
      settled: ['POSTED', 'FAILED'].includes(record.states[record.states.length - 1]),
      states: record.states,
      quarantinedByTheStop: record.quarantined,
      couldNotRecord: logsSaying('could not record'),
    }).toEqual({
      settled: true,
      states: expect.not.arrayContaining(['RAIL_AMBIGUOUS']),
      quarantinedByTheStop: 0,
      couldNotRecord: [],
    });
  });

  it('up again: keeps its state owner-only, lets the reconciler read as reconciler_ro, and stops on SIGTERM to its group', async () => {
    // The previous test's second start; its stop waits on no slow rail call (quickStubSeed).
    expect(next).toBeDefined();
    const run = next!;
    await printed(run, /\[dlock\] up\./);
    const reconcilerRoles = await reconcilerSessions();
    const owned = { dir: statSync(stateDir).mode & 0o777, inside: notOwnerOnly() };
    const sentAt = await signalGroup(run, 'SIGTERM');
    expectOrderlyOutput(run.output());
    await expectAllGone(run, sentAt);

    expect({ reconcilerRoles, owned }).toEqual({
      reconcilerRoles: expect.arrayContaining([
        { role: 'reconciler_ro', db: 'paydb' },
        { role: 'reconciler_ro', db: 'proxydb' },
      ]),
      // As root, PostgreSQL's group (its server runs as `postgres`) may pass through to its data.
      owned: { dir: process.getuid?.() === 0 ? 0o710 : 0o700, inside: [] },
    });
    expect(reconcilerRoles.filter((r) => r.role !== 'reconciler_ro')).toEqual([]);
  });
});
