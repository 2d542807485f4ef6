import { chownSync, copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import {
  createDatabase,
  freePort,
  migrate,
  REPO_ROOT,
  scratchDir,
  sleep,
  testAuthEnv,
  withClient,
} from '@dlock/testing';
import { containerLogs, docker, DLOCK_IMAGE, requireEngineAndImages } from './docker';

/**
 * The dlock image as the Dockerfile and the k8s manifests promise it (docs/operations.md,
 * "The image"): it runs as uid 1000 on a read-only root filesystem where only /tmp is
 * writable, carries no dev dependency and no compiler, and its entrypoint's migration mode
 * runs the TypeORM CLI. Records its size and, for the services that need only a database
 * and files, the time from `docker run` to ready (the whole system: compose.spec.ts).
 * Containers use host networking and the run's PostgreSQL on 127.0.0.1.
 */
jest.setTimeout(300_000);

/** As k8s runs it: read-only root, a tmpfs at /tmp, host networking for the run's PostgreSQL. */
const RUN = ['run', '--rm', '--network', 'host', '--read-only', '--tmpfs', '/tmp', DLOCK_IMAGE];
const READY_DEADLINE_MS = 60_000;
const started: string[] = [];

/** `docker run` of the image with ARGS as the entrypoint's command. */
const inImage = (...args: string[]) => docker([...RUN, ...args]);
const shell = (script: string) => inImage('sh', '-c', script);

beforeAll(async () => {
  await requireEngineAndImages([DLOCK_IMAGE]);
});

afterAll(async () => {
  if (started.length > 0) await docker(['rm', '-f', ...started]).catch(() => undefined);
});

it('is of a recorded size', async () => {
  const bytes = Number(await docker(['image', 'inspect', '--format', '{{.Size}}', DLOCK_IMAGE]));
  console.log(`image ${DLOCK_IMAGE}: ${Math.round(bytes / 1e6)} MB`);
  // node 20 with the production dependencies: a dev dependency or a toolchain would double it.
  expect(bytes).toBeLessThan(600e6);
});

it('runs as uid 1000 on a read-only root where only /tmp is writable', async () => {
  expect(await inImage('id', '-u')).toBe('1000');
  expect(await inImage('id', '-g')).toBe('1000');
  const dirs = [
    '/',
    '/app',
    '/app/dist',
    '/app/node_modules',
    '/home/node',
    '/identity',
    '/var/tmp',
  ];
  const probe = dirs.map((d) => `touch ${d}/.w 2>/dev/null && echo "${d} writable"`).join('; ');
  expect(await shell(`${probe}; touch /tmp/.w && echo /tmp ok`)).toBe('/tmp ok');
  // Read-only also without --read-only: the app's files are root's, not the app user's.
  const writable = await docker(['run', '--rm', DLOCK_IMAGE, 'find', '/app', '-writable']);
  expect(writable).toBe('');
});

it('holds no dev dependency and no compiler', async () => {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  // Type declarations that production packages depend on themselves (protobufjs and the pg
  // instrumentation name @types/node and @types/pg) come with them; they are inert files.
  const inert = ['@types/node', '@types/pg'];
  const dev = Object.keys(pkg.devDependencies)
    .filter((name) => !inert.includes(name))
    .map((name) => `node_modules/${name}`);
  const present = await shell(`for d in ${dev.join(' ')}; do [ -e "$d" ] && echo "$d"; done; true`);
  expect(present).toBe('');
  const compilers = 'gcc cc c++ g++ make python3 tsc tsserver swc tsc-alias nest';
  const found = await shell(
    `for t in ${compilers}; do command -v $t || ls node_modules/.bin/$t; done 2>/dev/null; true`,
  );
  expect(found).toBe('');
});

it("the entrypoint's migration mode runs the TypeORM CLI on a data source", async () => {
  const url = await createDatabase('image_migrate');
  const cli = 'node_modules/typeorm/cli.js';
  const out = await docker([
    ...RUN.slice(0, -1),
    '-e',
    `LOCKDB_URL=${url}`,
    DLOCK_IMAGE,
    'node',
    cli,
    'migration:run',
    '-d',
    'dist/migrations/lockdb/data-source.js',
  ]);
  expect(out).toMatch(/has been {1,2}executed successfully/);
  const done = await withClient(url, (c) => c.query('SELECT count(*)::int AS n FROM migrations'));
  expect(done.rows[0].n).toBeGreaterThan(0);
});

/** Files the container's uid 1000 can read (the tests' own are the test runner's). */
function forUid1000(files: Record<string, string>): { dir: string; env: Record<string, string> } {
  const dir = scratchDir('image-files');
  mkdirSync(dir, { recursive: true });
  const env: Record<string, string> = {};
  for (const [name, file] of Object.entries(files)) {
    const copy = path.join(dir, `${name}${path.extname(file)}`);
    copyFileSync(file, copy);
    chownSync(copy, 1000, 1000);
    env[name] = copy;
  }
  chownSync(dir, 1000, 1000);
  return { dir, env };
}

/** `docker run -d` of APP with ENV (files mounted read-only), timed to its first ready answer. */
async function runToReady(app: string, env: Record<string, string>, mount?: string) {
  const port = await freePort();
  const vars = Object.entries({ ...env, APP: app, PORT: String(port), LOG_LEVEL: 'warn' });
  const t0 = Date.now();
  const id = await docker([
    'run',
    '-d',
    ...RUN.slice(2, -1),
    ...(mount ? ['-v', `${mount}:${mount}:ro`] : []),
    ...vars.flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    DLOCK_IMAGE,
  ]).then((out) => out.split('\n').at(-1)!);
  started.push(id);
  let last = '';
  while (Date.now() - t0 < READY_DEADLINE_MS) {
    const res = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
    if (res?.ok) return Date.now() - t0;
    last = res ? `${res.status} ${await res.text()}` : 'no answer';
    await sleep(50);
  }
  const logs = await containerLogs(id);
  throw new Error(`${app} not ready (${last}): ${logs}`);
}

it('starts rail-stub and lock-server from docker run to ready', async () => {
  const stubMs = await runToReady('rail-stub', {});
  const lockdb = await createDatabase('image_lock');
  await migrate(lockdb, 'lockdb');
  const auth = await testAuthEnv();
  const files = forUid1000({
    AUTH_JWKS: auth.AUTH_JWKS,
    AUTH_POLICY: auth.AUTH_POLICY,
    GRANT_SIGNING_KEYS: auth.GRANT_SIGNING_KEYS,
  });
  try {
    const lockMs = await runToReady(
      'lock-server',
      { ...files.env, AUTH_ISSUER: auth.AUTH_ISSUER, LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb },
      files.dir,
    );
    console.log(`docker run to ready: rail-stub ${stubMs} ms, lock-server ${lockMs} ms`);
  } finally {
    rmSync(files.dir, { recursive: true, force: true });
  }
});
