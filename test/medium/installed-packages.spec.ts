// A team's own Nest service, outside this repository, built on the published
// packages only (docs/extending.md): the packages are packed (npm run pack:libs),
// installed into a brand-new project in a temporary directory together with
// public dependencies from the registry, the example's sources are compiled by
// that project's own TypeScript, migrated with its TypeORM CLI, and run
// against a real lock-server. A package that reaches into the repository (a
// path to it, a file left out of `files`, an import of an unpublished
// @dlock/* library) fails here.
import { type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { LockClient } from '@dlock/lock-client';
import { fencedUpdateStatement } from '@dlock/persistence';
import {
  ADOPTERS,
  DATABASE_URL,
  MIGRATIONS,
  guideCommands,
  makeAdopter,
  NPM_ENV,
  templateDir,
  type Adopter,
  type AdopterKind,
} from './adopter-projects';
import { contentKey, madeOnce } from './support/machine-cache';
import {
  DEV_POLICY_PATH,
  REPO_ROOT,
  createDatabase,
  freePort,
  http,
  migratedDatabase,
  revocationNoticesUrl,
  spawnApp,
  testAuthEnv,
  testTokenDir,
  testTokenProvider,
  waitFor,
  withClient,
  type RunningApp,
  spawnGroup,
} from '@dlock/testing';

interface PackageJson {
  name: string;
  version: string;
  workspaces?: string[];
  exports?: Record<string, string | Record<string, string>>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const ROOT_PACKAGE = readJson<PackageJson>(path.join(REPO_ROOT, 'package.json'));
const PUBLISHED = (ROOT_PACKAGE.workspaces ?? []).map((dir) =>
  readJson<PackageJson>(path.join(REPO_ROOT, dir, 'package.json')),
);
const EXAMPLE = path.join(REPO_ROOT, 'examples', 'refund-sender');
/** What `nest new` puts in a project's dependencies, plus what the example imports; pinned as here. */
const PUBLIC_DEPENDENCIES = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  '@nestjs/config',
  '@nestjs/terminus',
  '@nestjs/typeorm',
  'typeorm',
  'pg',
  'prom-client',
  'reflect-metadata',
  'rxjs',
];
const PUBLIC_DEV_DEPENDENCIES = ['typescript', '@types/node'];
/** The Nest 11 starter's compiler options (`nest new`), strict. */
const TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    resolvePackageJsonExports: true,
    esModuleInterop: true,
    isolatedModules: true,
    declaration: true,
    removeComments: true,
    emitDecoratorMetadata: true,
    experimentalDecorators: true,
    allowSyntheticDefaultImports: true,
    target: 'ES2023',
    sourceMap: true,
    outDir: './dist',
    baseUrl: './',
    skipLibCheck: true,
    strict: true,
    forceConsistentCasingInFileNames: true,
    noFallthroughCasesInSwitch: true,
  },
  include: ['src'],
  // The example's own specs, for the adopter projects' runners (./adopter-projects.ts).
  exclude: ['src/**/*.spec.ts'],
};
/** A team's unit check of `@dlock/lock-client/testing` (docs/extending.md, "Testing"). */
const CHECK_TESTING = `
import { ContentionError, LockClient } from '@dlock/lock-client';
import { FakeLockServer } from '@dlock/lock-client/testing';

async function main(): Promise<void> {
  const server = new FakeLockServer();
  const client = (ownerId: string) =>
    new LockClient({ baseUrl: 'http://lock-server.test', ownerId, transport: server.transport });
  const [a, b] = [await client('refunds-a').openSession(), await client('refunds-b').openSession()];
  const first = await a.acquire('refund:r-9');
  const contended = await b.acquire('refund:r-9').then(
    () => 'granted',
    (err: unknown) => (err instanceof ContentionError ? err.code : String(err)),
  );
  server.revoke('refund:r-9');
  const next = await b.acquire('refund:r-9');
  console.log(JSON.stringify({ first: \`\${first.fencingToken}\`, contended, next: \`\${next.fencingToken}\` }));
  await Promise.all([a.close(), b.close()]);
}
void main();
`;

/** What the packed libraries are made from (scripts/packages.js): a change to any packs anew. */
const PACKED_FROM = [
  ...(ROOT_PACKAGE.workspaces ?? []),
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'scripts/packages.js',
];
/** What a made adopter project is made from, besides its template and the packed libraries. */
const ADOPTER_MADE_FROM = [
  'examples/refund-sender/src',
  'docs/extending.md',
  'test/medium/adopter-projects.ts',
  'scripts/adopter-templates.ts',
];

const children = new Set<ChildProcess>();

/** Runs a command to its exit with only `env`; killed after `timeoutMs`, so nothing outlives the test. */
function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs = 300_000,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawnGroup(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('error', reject);
    proc.on('close', (code) => {
      clearTimeout(timer);
      children.delete(proc);
      resolve({ code, out });
    });
  });
}

/** PATH and HOME (npm's cache and config), and the proxy or registry settings of this machine if any. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
  };
  for (const name of [
    'npm_config_registry',
    'npm_config_cache',
    'HTTPS_PROXY',
    'HTTP_PROXY',
    'NO_PROXY',
    'https_proxy',
    'http_proxy',
    'no_proxy',
  ])
    if (process.env[name]) env[name] = process.env[name];
  return env;
}

function expectExit(result: { code: number | null; out: string }, what: string): void {
  expect({ what, code: result.code, out: result.code === 0 ? '' : result.out }).toEqual({
    what,
    code: 0,
    out: '',
  });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

const SPECIFIER = /(?:\bfrom\s+|\brequire\(\s*|\bimport\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;
const BUILTINS = new Set(builtinModules);

/** Everything wrong with one installed package: files, paths into the repository, undeclared imports. */
function problemsOf(dir: string): string[] {
  const pkg = readJson<PackageJson>(path.join(dir, 'package.json'));
  const problems: string[] = [];
  const files = filesUnder(dir);
  for (const f of ['README.md', 'CHANGELOG.md'])
    if (!files.includes(f)) problems.push(`${pkg.name}: no ${f}`);
  for (const f of files)
    if (!/^(package\.json|README\.md|CHANGELOG\.md|dist\/.+\.(js|d\.ts))$/.test(f))
      problems.push(`${pkg.name}: unexpected file ${f}`);
  for (const [entry, target] of Object.entries(pkg.exports ?? {}))
    for (const file of typeof target === 'string' ? [target] : Object.values(target))
      if (!existsSync(path.join(dir, file)))
        problems.push(`${pkg.name}: exports ${entry} → missing ${file}`);
  const declared = { ...pkg.dependencies, ...pkg.peerDependencies };
  const repo = [REPO_ROOT, realpathSync(REPO_ROOT)];
  for (const f of files.filter((name) => /\.(js|d\.ts)$/.test(name))) {
    const text = readFileSync(path.join(dir, f), 'utf8');
    if (repo.some((r) => text.includes(r))) problems.push(`${pkg.name}/${f}: names the repository`);
    for (const [, spec] of text.matchAll(SPECIFIER)) {
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(path.join(dir, f)), spec);
        const candidates = f.endsWith('.d.ts')
          ? [`${target}.d.ts`, path.join(target, 'index.d.ts')]
          : [`${target}.js`, target, path.join(target, 'index.js')];
        if (!target.startsWith(dir + path.sep) || !candidates.some((c) => existsSync(c)))
          problems.push(`${pkg.name}/${f}: ${spec} is not in the package`);
        continue;
      }
      if (spec.startsWith('node:') || BUILTINS.has(spec)) continue;
      const name = spec.startsWith('@')
        ? spec.split('/').slice(0, 2).join('/')
        : spec.split('/')[0];
      if (!(name in declared)) problems.push(`${pkg.name}/${f}: imports ${spec}, not declared`);
      else if (name.startsWith('@dlock/') && !PUBLISHED.some((p) => p.name === name))
        problems.push(`${pkg.name}/${f}: imports ${name}, which is not published`);
    }
  }
  return problems;
}

let work: string;
let stopping = false;
/** `run`, refused once the file's afterAll began: nothing starts while the directory goes. */
const runUnlessStopping: typeof run = (...args) =>
  stopping ? Promise.resolve({ code: null, out: 'the test is stopping' }) : run(...args);
/** The three adopter projects, made while the pinned one is set up; an Error names the step that failed. */
const adopters = new Map<string, Promise<Adopter | Error>>();
let app: string;
let refundsDb: string;
let lockServer: RunningApp;
/** Where the team's app as refunds-1 listens: the lock-server's fence point of `refund:` keys. */
let refundsPort: number;
const teamApps: ChildProcess[] = [];

/** The example's main.js as `ownerId`, answering HTTP (its readiness may still say no session). */
async function startTeamApp(
  ownerId: string,
  port?: number,
): Promise<{ url: string; output: () => string; firstReady: number }> {
  port ??= await freePort();
  const proc = spawnGroup(process.execPath, ['dist/main.js'], {
    cwd: app,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      LOCK_SERVER_URL: lockServer.url,
      OWNER_ID: ownerId,
      AUTH_TOKEN_DIR: await testTokenDir(ownerId),
      REFUNDS_DATABASE_URL: refundsDb,
      LOCK_SERVER_JWKS: (await testAuthEnv()).GRANT_JWKS,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  teamApps.push(proc);
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  const firstReady = await waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}: ${out}`);
      return fetch(`${url}/health/ready`).then((res) => res.status);
    },
    30_000,
    `the team's app as ${ownerId}`,
  );
  return { url, output: () => out, firstReady };
}

async function stopTeamApps(): Promise<void> {
  await Promise.all(
    teamApps.map(
      (proc) =>
        new Promise<void>((resolve) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
          const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
          proc.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          proc.kill('SIGTERM');
        }),
    ),
  );
}

const post = (url: string) =>
  fetch(url, { method: 'POST' }).then(async (res) => ({
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
  }));

const refund = (id: string) =>
  withClient(refundsDb, async (c) => {
    const rows = await c.query<{ status: string; fence: string; sent_token: string | null }>(
      'SELECT status, fence, sent_token FROM refund WHERE id = $1',
      [id],
    );
    return rows.rows[0];
  });

/**
 * One adopter project, made once per machine for the same template, libraries, example and
 * guide (./support/machine-cache.ts), and linked into this run's directory: its specs and
 * migrations write into it. Hard links, not a copy: a project is some 40,000 files (its
 * node_modules) that `cp -a` wrote out again on every run, for minutes on a busy disk. What
 * the run writes is new files in its own directories (dist, caches), never an existing file
 * rewritten in place, so the made project stays as it was made.
 */
async function adopterFor(
  kind: AdopterKind,
  packKey: string,
  packagesDir: string,
): Promise<Adopter> {
  const key = contentKey(
    ADOPTER_MADE_FROM.map((p) => path.join(REPO_ROOT, p)),
    [packKey, templateDir(kind)],
  );
  let made: Adopter | undefined;
  const dir = await madeOnce(`adopter-${kind.name}`, key, async (building) => {
    made = await makeAdopter(kind, building, packagesDir, runUnlessStopping, baseEnv());
  });
  const project = path.join(work, kind.name, 'refunds');
  mkdirSync(path.dirname(project), { recursive: true });
  // Links need the cache and the run's directory on one filesystem; elsewhere (a tmpfs /tmp), a copy.
  const sameDisk = statSync(dir).dev === statSync(work).dev;
  const copied = await runUnlessStopping(
    'cp',
    [sameDisk ? '-al' : '-a', path.join(dir, kind.name, 'refunds'), project],
    work,
    baseEnv(),
  );
  expectExit(copied, `${kind.name}: link the made project`);
  return { kind, project, env: { ...baseEnv(), ...NPM_ENV }, steps: made?.steps ?? [] };
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'dlock-team-app-'));
  expect(realpathSync(work).startsWith(realpathSync(REPO_ROOT))).toBe(false);
  const packagesDir = path.join(work, 'packages');
  const packKey = contentKey(PACKED_FROM.map((p) => path.join(REPO_ROOT, p)));
  const packed = await madeOnce('packages', packKey, async (dir) =>
    expectExit(
      await run(
        process.execPath,
        [path.join(REPO_ROOT, 'scripts', 'packages.js'), 'pack', '--out', dir],
        REPO_ROOT,
        baseEnv(),
      ),
      'npm run pack:libs',
    ),
  );
  cpSync(packed, packagesDir, { recursive: true });
  for (const kind of ADOPTERS)
    adopters.set(
      kind.name,
      adopterFor(kind, packKey, packagesDir).catch((err: unknown) =>
        err instanceof Error ? err : new Error(String(err)),
      ),
    );
  // Built beside the sources, a package would shadow its alias: `nest build` leaves an import
  // that resolves as a package unrewritten, and the app would load the package (scripts/packages.js).
  for (const dir of ROOT_PACKAGE.workspaces ?? [])
    expect({ dir, built: existsSync(path.join(REPO_ROOT, dir, 'dist')) }).toEqual({
      dir,
      built: false,
    });

  // A brand-new project: the tarballs, and public packages at the versions this repository pins.
  app = path.join(work, 'refunds');
  mkdirSync(app);
  const pin = (name: string) =>
    ROOT_PACKAGE.dependencies?.[name] ?? ROOT_PACKAGE.devDependencies?.[name] ?? 'missing';
  const tarball = (p: PackageJson) => `${p.name.slice(1).replace('/', '-')}-${p.version}.tgz`;
  const manifest = JSON.stringify({
    name: 'refunds',
    version: '1.0.0',
    private: true,
    dependencies: {
      ...Object.fromEntries(PUBLISHED.map((p) => [p.name, `file:../packages/${tarball(p)}`])),
      ...Object.fromEntries(PUBLIC_DEPENDENCIES.map((n) => [n, pin(n)])),
    },
    devDependencies: Object.fromEntries(PUBLIC_DEV_DEPENDENCIES.map((n) => [n, pin(n)])),
  });
  // The install, made in the cache beside a copy of the tarballs (its lock names them as
  // ../packages); the project takes its manifest and lock, and its node_modules as a link.
  const installedAt = await madeOnce(
    'refunds',
    contentKey([], [packKey, manifest]),
    async (dir) => {
      cpSync(packagesDir, path.join(dir, 'packages'), { recursive: true });
      mkdirSync(path.join(dir, 'refunds'));
      writeFileSync(path.join(dir, 'refunds', 'package.json'), manifest);
      const installed = await run(
        'npm',
        ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'],
        path.join(dir, 'refunds'),
        baseEnv(),
      );
      expectExit(installed, 'npm install');
    },
  );
  for (const file of ['package.json', 'package-lock.json'])
    cpSync(path.join(installedAt, 'refunds', file), path.join(app, file));
  symlinkSync(path.join(installedAt, 'refunds', 'node_modules'), path.join(app, 'node_modules'));

  cpSync(path.join(EXAMPLE, 'src'), path.join(app, 'src'), { recursive: true });
  writeFileSync(path.join(app, 'src', 'check-testing.ts'), CHECK_TESTING);
  writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  expectExit(await run('node_modules/.bin/tsc', ['-p', 'tsconfig.json'], app, baseEnv()), 'tsc');
  // Older projects resolve as node10, which ignores `exports` (the packages' typesVersions).
  const node10 = ['--moduleResolution', 'node10', '--module', 'commonjs'];
  const check = ['-p', 'tsconfig.json', '--noEmit', '--resolvePackageJsonExports', 'false'];
  expectExit(
    await run('node_modules/.bin/tsc', [...check, ...node10], app, baseEnv()),
    'tsc (moduleResolution node10)',
  );

  refundsDb = await createDatabase('refunds');
  const migrated = await run(
    'node_modules/.bin/typeorm',
    ['migration:run', '-d', 'dist/data-source.js'],
    app,
    { ...baseEnv(), REFUNDS_DATABASE_URL: refundsDb },
  );
  expectExit(migrated, 'typeorm migration:run');
  expect(migrated.out).toContain('RefundTable1764600000000');

  // The development policy with the example's entries added, as docs/extending.md tells a team.
  const policy = parse(readFileSync(DEV_POLICY_PATH, 'utf8')) as {
    roles: Record<string, unknown>;
    identities: unknown[];
  };
  const entry = parse(
    readFileSync(path.join(EXAMPLE, 'auth-policy.yaml'), 'utf8'),
  ) as typeof policy;
  Object.assign(policy.roles, entry.roles);
  policy.identities.push(...entry.identities);
  const policyPath = path.join(work, 'auth-policy.yaml');
  writeFileSync(policyPath, stringify(policy));
  // The team's app is the fence point of its keys: configuration only (docs/extending.md).
  refundsPort = await freePort();
  const fencePoint = { name: 'refunds', prefix: 'refund:' };
  const url = revocationNoticesUrl(`http://127.0.0.1:${refundsPort}`);
  lockServer = await spawnApp('lock-server', {
    LOCKDB_URL: await migratedDatabase('lockdb'),
    LOCK_BACKEND: 'pg',
    AUTH_POLICY: policyPath,
    FENCE_POINTS: JSON.stringify([{ ...fencePoint, url }]),
  });
}, 600_000);

afterAll(async () => {
  stopping = true;
  for (const proc of children) proc.kill('SIGKILL');
  await stopTeamApps();
  await lockServer?.stop();
  // An adopter still being made stops: its running step was killed, it starts no other.
  await Promise.all(adopters.values());
  // Four projects' node_modules: tens of thousands of files, so not in one blocking call.
  if (work) await rm(work, { recursive: true, force: true });
}, 180_000);

it('installs every package from its tarball, none from a registry', () => {
  const lock = readJson<{ packages: Record<string, { resolved?: string }> }>(
    path.join(app, 'package-lock.json'),
  );
  const dlock = Object.entries(lock.packages).filter(([at]) => at.includes('node_modules/@dlock/'));
  expect(dlock.map(([at]) => at).sort()).toEqual(
    PUBLISHED.map((p) => `node_modules/${p.name}`).sort(),
  );
  for (const [, entry] of dlock) expect(entry.resolved).toMatch(/^file:\.\.\/packages\/dlock-/);
});

it('each package holds only its dist, README and CHANGELOG, and imports only what it declares', () => {
  const problems = PUBLISHED.flatMap((p) => problemsOf(path.join(app, 'node_modules', p.name)));
  expect(problems).toEqual([]);
});

it('@dlock/lock-client/testing runs the SDK on the in-memory lock-server', async () => {
  const result = await run(process.execPath, ['dist/check-testing.js'], app, baseEnv(), 30_000);
  expectExit(result, 'check-testing');
  expect(JSON.parse(result.out)).toEqual({
    first: '1',
    contended: 'CONTENTION_EXCEEDED',
    next: '2',
  });
});

it('sends a refund once under withLock and its fenced writes; the lock is released after; a revoke fences the table before it answers; a half-sent refund is the team’s own safety event', async () => {
  const team = await startTeamApp('refunds-1', refundsPort);
  // The session opened while the app booted: its very first readiness answer is yes.
  expect(team.firstReady).toBe(200);
  await withClient(refundsDb, (c) =>
    c.query(`INSERT INTO refund (id, amount_minor) VALUES ('r-1', 1250), ('r-2', 990)`),
  );
  expect(await post(`${team.url}/refunds/r-1/send`)).toEqual({
    status: 200,
    body: { id: 'r-1', result: 'sent' },
  });
  const sent = await refund('r-1');
  expect(sent).toEqual({ status: 'SENT', fence: sent.fence, sent_token: sent.fence });
  expect(BigInt(sent.fence)).toBeGreaterThan(0n);
  const lock = await http('GET', `${lockServer.url}/v1/locks/refund:r-1`);
  expect(lock).toMatchObject({ status: 200, body: { key: 'refund:r-1', held: false } });
  expect(await post(`${team.url}/refunds/r-1/send`)).toEqual({
    status: 200,
    body: { id: 'r-1', result: 'already-sent' },
  });

  // A newer grant than any this app will get wrote r-2: the app's fenced intent changes nothing.
  const newer = (2n ** 62n).toString();
  await withClient(refundsDb, (c) =>
    c.query(`UPDATE refund SET fence = $1 WHERE id = 'r-2'`, [newer]),
  );
  expect(await post(`${team.url}/refunds/r-2/send`)).toEqual({
    status: 200,
    body: { id: 'r-2', result: 'fenced' },
  });
  expect(await refund('r-2')).toEqual({ status: 'PENDING', fence: newer, sent_token: null });

  // A healthy app's log: Nest's start-up lines and the session, nothing alarming, one line each.
  const log = team.output();
  expect(log).toContain('lock session opened sessionId=');
  expect(log).not.toMatch(/\b(ERROR|WARN)\b|Object\(\d+\)|^\s+at /m);

  // A worker holds refund:r-7 and is revoked without being told: the app's FencePointModule
  // raised the row's fence before the revoke answered, so the holder's next write is refused.
  await withClient(refundsDb, (c) =>
    c.query(`INSERT INTO refund (id, amount_minor) VALUES ('r-7', 700)`),
  );
  const worker = new LockClient({
    baseUrl: lockServer.url,
    ownerId: 'refunds-7',
    token: testTokenProvider('refunds-7'),
  });
  const session = await worker.openSession();
  const handle = await session.acquire('refund:r-7', { ttlMs: 30_000 });
  const revoked = await http('POST', `${lockServer.url}/v1/locks/refund:r-7/revoke`, {
    body: { operator: 'operator', reason: 'worker hung', expectedToken: `${handle.fencingToken}` },
  });
  expect(revoked).toMatchObject({ status: 200, body: { guards: { refunds: 'raised' } } });
  const floor = (revoked.body as { newTokenFloor: string }).newTokenFloor;
  expect(await refund('r-7')).toEqual({ status: 'PENDING', fence: floor, sent_token: null });
  const stale = fencedUpdateStatement({
    table: 'refund',
    id: 'r-7',
    token: handle.fencingToken,
    set: { status: 'SENDING', sent_token: `${handle.fencingToken}` },
  });
  const written = await withClient(refundsDb, (c) => c.query(stale.sql, stale.params));
  expect(written.rowCount).toBe(0);
  expect(await refund('r-7')).toEqual({ status: 'PENDING', fence: floor, sent_token: null });
  expect(team.output()).toMatch(/WARN.*fence_floor_raised key=refund:r-7 floor=\d+/);
  await session.close();

  // The team's own safety event, registered with @dlock/lock-nest (docs/extending.md): a refund
  // an earlier grant left SENDING is a log line and a counter its /metrics serves from 0.
  const needsCheckTotal = async () =>
    /^refund_needs_check_total (\S+)$/m.exec(
      await (await fetch(`${team.url}/metrics`)).text(),
    )?.[1];
  expect(await needsCheckTotal()).toBe('0');
  await withClient(refundsDb, (c) =>
    c.query(
      `INSERT INTO refund (id, amount_minor, status, fence, sent_token) VALUES ('r-6', 500, 'SENDING', 1, 1)`,
    ),
  );
  expect(await post(`${team.url}/refunds/r-6/send`)).toMatchObject({
    status: 409,
    body: { code: 'REFUND_NEEDS_CHECK', retrySafe: false, details: { refundId: 'r-6' } },
  });
  expect(await needsCheckTotal()).toBe('1');
  expect(team.output()).toMatch(
    /WARN.*\[safety\].*refund left half-sent by an earlier grant: check the payment network event=refund_needs_check refundId=r-6 token=\d+/,
  );
});

it('an identity the policy does not name is refused: 403 FORBIDDEN, answered by DlockExceptionFilter', async () => {
  const billing = await startTeamApp('billing-1');
  expect((await fetch(`${billing.url}/health/ready`)).status).toBe(503);
  const refused = await post(`${billing.url}/refunds/r-3/send`);
  expect(refused).toEqual({
    status: 403,
    body: {
      code: 'FORBIDDEN',
      message: expect.any(String),
      retrySafe: false,
      details: { operation: 'sessions.open', reason: 'policy' },
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
    },
  });
});

describe.each(ADOPTERS.map((kind) => [kind.name, kind] as const))(
  'a %s project made by nest new',
  (name, kind) => {
    it('migrates with the TypeORM CLI, then its own specs pass under its runner: FakeLockServer, and a real lock-server', async () => {
      const made = await adopters.get(name);
      if (made instanceof Error) throw made;
      const { project, env } = made!;
      const database = await createDatabase('refunds');
      // The guide's migration line, its example URL swapped for this test's database.
      const [migrate] = guideCommands(MIGRATIONS).filter((line) => line.startsWith(DATABASE_URL));
      const command = migrate.replace(/^REFUNDS_DATABASE_URL=\S+ /, '');
      const migrated = await run('sh', ['-c', command], project, {
        ...env,
        REFUNDS_DATABASE_URL: database,
      });
      expectExit(migrated, `${name}: ${command}`);
      expect(migrated.out).toContain('RefundTable1764600000000');
      const tested = await run(
        'npm',
        ['test'],
        project,
        {
          ...env,
          LOCK_SERVER_URL: lockServer.url,
          OWNER_ID: 'refunds-1',
          AUTH_TOKEN_DIR: await testTokenDir('refunds-1'),
          REFUNDS_DATABASE_URL: database,
          LOCK_SERVER_JWKS: (await testAuthEnv()).GRANT_JWKS,
        },
        180_000,
      );
      expectExit(tested, `${name}: npm test`);
      for (const spec of ['refunds.fake-lock-server.spec.ts', 'refunds.lock-server.spec.ts'])
        expect(tested.out).toContain(spec);
      expect(tested.out).toContain(kind.esm ? 'vitest' : 'jest');
    }, 900_000);
  },
);
