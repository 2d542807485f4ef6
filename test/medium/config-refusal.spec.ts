// A bad database or peer URL is refused at start: exit code 1 and the
// variable named on stderr, never a silent fallback to localhost or a stack
// trace naming nothing. Real built entrypoints.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, freePort, testAppAuthEnv, spawnGroup } from '@dlock/testing';

interface Exit {
  code: number | null;
  stderr: string;
}

async function run(args: string[], env: Record<string, string>, cwd = REPO_ROOT): Promise<Exit> {
  // A valid identity configuration: each case is about the one variable it names.
  const auth = { ...(await testAppAuthEnv('config-refusal')) };
  return new Promise((resolve, reject) => {
    const [entry, ...rest] = args;
    // The entry file from the repository, wherever the process runs (a case sets its own cwd).
    const proc = spawnGroup(process.execPath, [path.resolve(REPO_ROOT, entry), ...rest], {
      cwd,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...auth, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    proc.on('error', reject);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

const main = (app: string) => path.join('dist', 'apps', app, 'main.js');
const DB = 'postgres://u:p@127.0.0.1:1/db';

describe('configuration refused at start', () => {
  const cases: { app: string; env: Record<string, string>; variable: string }[] = [
    { app: 'payment-resource', env: { PAYDB_URL: 'localhost:55432/paydb' }, variable: 'PAYDB_URL' },
    {
      app: 'rail-proxy',
      env: { PROXYDB_URL: 'localhost:55432/proxydb' },
      variable: 'PROXYDB_URL',
    },
    {
      app: 'lock-server',
      env: { LOCK_BACKEND: 'pg', LOCKDB_URL: 'localhost:55432/lockdb' },
      variable: 'LOCKDB_URL',
    },
    {
      app: 'reconciler',
      env: { PAYDB_URL: DB, PROXYDB_URL: 'proxydb.internal:5432/proxydb' },
      variable: 'PROXYDB_URL',
    },
    {
      app: 'executor',
      env: { OWNER_ID: 'w-1', LOCK_SERVER_URL: 'https://lock-server:8081' },
      variable: 'LOCK_SERVER_URL',
    },
    {
      app: 'reconciler',
      env: { PAYDB_URL: DB, PROXYDB_URL: DB, PAYMENT_RESOURCE_URL: 'https://pr:8082' },
      variable: 'PAYMENT_RESOURCE_URL',
    },
    {
      app: 'rail-proxy',
      env: { PROXYDB_URL: DB, RAIL_STUB_URL: 'https://rail:8085' },
      variable: 'RAIL_STUB_URL',
    },
    // Tracing is read before anything else loads (libs/tracing): refused the same way.
    {
      app: 'lock-server',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' },
      variable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    },
    { app: 'rail-stub', env: { OTEL_TRACES_EXPORTER: 'jaeger' }, variable: 'OTEL_TRACES_EXPORTER' },
  ];

  it.each(cases)('$app refuses a bad $variable with exit code 1, naming it', async (c) => {
    const res = await run([main(c.app)], { ...c.env, PORT: String(await freePort()) });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`${c.variable}: must be`);
    expect(res.stderr).not.toMatch(/^\s+at /m); // a message, not a stack trace
  });

  it.each(['lockdb', 'paydb', 'proxydb'])(
    'the TypeORM CLI data source of %s refuses an unset URL instead of using localhost',
    async (db) => {
      const variable = `${db.toUpperCase()}_URL`;
      const res = await run(
        [
          'node_modules/typeorm/cli.js',
          'migration:show',
          '-d',
          `dist/migrations/${db}/data-source.js`,
        ],
        {},
      );
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(`${variable}: is required`);
      // The variable first, alone: no "Unable to open file" and no stack trace around it.
      expect(res.stderr).toBe(
        `[typeorm data source] invalid configuration:\n  ${variable}: is required\n`,
      );
    },
  );

  it('the TypeORM CLI data source refuses a scheme-less URL the same way', async () => {
    const args = ['migration:run', '-d', 'dist/migrations/paydb/data-source.js'];
    const res = await run(['node_modules/typeorm/cli.js', ...args], {
      PAYDB_URL: 'localhost/paydb',
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('PAYDB_URL: must be');
    expect(res.stderr).not.toMatch(/^\s+at /m);
  });

  it('npm run db:migrate refuses a bad URL naming it, without a stack trace', async () => {
    const res = await run(['dist/scripts/migrate.js'], { PROXYDB_URL: 'proxydb.internal/proxydb' });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('PROXYDB_URL: must be');
    expect(res.stderr).not.toMatch(/^\s+at /m);
  });
});

describe('where configuration comes from', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'config-refusal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const problems = (stderr: string) =>
    stderr
      .split('\n')
      .filter((line) => /^\s+[A-Z_]+: /.test(line))
      .map((line) => line.trim().split(':')[0]);

  it('names every offending variable, not only the first', async () => {
    const res = await run([main('payment-resource')], {
      PAYDB_URL: 'localhost:55432/paydb',
      PORT: '80a',
      PAYDB_POOL_MAX: '0',
      PAYMENT_FENCING_ENABLED: 'maybe',
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('invalid configuration:');
    expect(problems(res.stderr).sort()).toEqual([
      'PAYDB_POOL_MAX',
      'PAYDB_URL',
      'PAYMENT_FENCING_ENABLED',
      'PORT',
    ]);
  });

  it('reads a .env file only when DLOCK_ENV_FILE names it; the environment wins over it', async () => {
    // A stray .env in the working directory, with a bad value of its own.
    writeFileSync(
      path.join(dir, '.env'),
      'RAIL_STUB_SEED=-1\nRAIL_STUB_HOLD_MS=soon\nRAIL_STUB_FAILURE_RATE=2\n',
    );
    const env = { RAIL_STUB_FAILURE_RATE: '0', RAIL_STUB_DECLINE_RATE: '7' };
    const stray = await run([main('rail-stub')], env, dir);
    expect(stray.code).toBe(1);
    expect(problems(stray.stderr)).toEqual(['RAIL_STUB_DECLINE_RATE']);

    const named = await run([main('rail-stub')], { ...env, DLOCK_ENV_FILE: '.env' }, dir);
    expect(named.code).toBe(1);
    expect(problems(named.stderr).sort()).toEqual([
      'RAIL_STUB_DECLINE_RATE',
      'RAIL_STUB_HOLD_MS',
      'RAIL_STUB_SEED',
    ]);
  });
});
