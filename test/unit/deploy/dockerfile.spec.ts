// Dockerfile: no engine here to build it, and hadolint is in neither Debian nor
// npm, so the file is checked by structure and its entrypoint script is run for real.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRepoFile, repoRoot, run } from './deploy-tools';

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions with continuation lines joined and comments dropped. */
function instructions(text: string): Instruction[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  const ins = instructions(readRepoFile('Dockerfile'));
  const stages = ins.filter((i) => i.op === 'FROM').map((i) => i.args);
  const runtime = ins.slice(ins.findIndex((i) => i.op === 'FROM' && i.args.endsWith('AS runtime')));

  it('has the deps, build and runtime stages on one Node 20 base', () => {
    expect(stages).toEqual([
      '${NODE_IMAGE} AS deps',
      '${NODE_IMAGE} AS build',
      '${NODE_IMAGE} AS runtime',
    ]);
    expect(ins[0]).toEqual({ op: 'ARG', args: 'NODE_IMAGE=node:20.20-bookworm-slim' });
  });

  it('installs production dependencies from the lock file only, and builds with npm run build', () => {
    const runs = ins.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs[0]).toMatch(/^npm ci --omit=dev .*--ignore-scripts/);
    expect(runs).toContain('npm run build');
  });

  it('runs as a numeric non-root user, app chosen by APP, through the entrypoint', () => {
    const users = runtime.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users).toEqual(['1000:1000']);
    expect(runtime).toContainEqual({ op: 'ARG', args: 'APP=lock-server' });
    expect(runtime).toContainEqual({ op: 'ENV', args: 'APP=${APP}' });
    expect(runtime).toContainEqual({
      op: 'ENTRYPOINT',
      args: '["/usr/local/bin/dlock-entrypoint"]',
    });
    expect(runtime.map((i) => i.args).join('\n')).not.toMatch(/node_modules\/\.bin|typescript/);
  });

  it('keeps dependencies, build output and secrets out of the build context', () => {
    const ignored = readRepoFile('.dockerignore').split('\n');
    for (const p of ['node_modules', 'dist', '.dlock', '.git', 'terraform', 'k8s']) {
      expect(ignored).toContain(p);
    }
  });
});

describe('deploy/docker/entrypoint.sh', () => {
  const script = join(repoRoot, 'deploy/docker/entrypoint.sh');
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dlock-entry-'));
    mkdirSync(join(dir, 'dist/apps/fake'), { recursive: true });
    // A stand-in app that prints the environment it was started with.
    writeFileSync(
      join(dir, 'dist/apps/fake/main.js'),
      'console.log(JSON.stringify({ url: process.env.PAYDB_URL, file: process.env.PAYDB_URL_FILE ?? null }));',
    );
    writeFileSync(join(dir, 'paydb-url'), 'postgres://pay_app:s3cret@127.0.0.1:5432/paydb');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH ?? '', ...extra });

  it('parses as POSIX sh', () => {
    expect(run('sh', ['-n', script]).status).toBe(0);
  });

  it('turns NAME_FILE into NAME and starts dist/apps/$APP/main.js', () => {
    const res = run('sh', [script], {
      cwd: dir,
      env: env({ APP: 'fake', PAYDB_URL_FILE: join(dir, 'paydb-url') }),
    });
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({
      url: 'postgres://pay_app:s3cret@127.0.0.1:5432/paydb',
      file: null,
    });
  });

  it('runs its arguments instead when given some (migrations)', () => {
    const res = run('sh', [script, 'sh', '-c', 'echo "$PAYDB_URL"'], {
      cwd: dir,
      env: env({ PAYDB_URL_FILE: join(dir, 'paydb-url') }),
    });
    expect(res).toEqual({
      status: 0,
      stdout: 'postgres://pay_app:s3cret@127.0.0.1:5432/paydb\n',
      stderr: '',
    });
  });

  it('refuses an unknown APP and a missing secret file, naming them', () => {
    const unknown = run('sh', [script], { cwd: dir, env: env({ APP: 'nope' }) });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("unknown APP 'nope'");
    const missing = run('sh', [script], {
      cwd: dir,
      env: env({ APP: 'fake', PAYDB_URL_FILE: join(dir, 'absent') }),
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('PAYDB_URL_FILE=');
  });
});
