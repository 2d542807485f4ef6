// `npx nest build <app>` emits the layout the apps run from (nest-cli.json,
// apps/<app>/tsconfig.app.json): dist/apps/<app>/main.js beside dist/libs/…,
// aliases rewritten, so the entry boots as `npm run build`'s does. Built here
// into a directory of its own, never over the dist/ other tests run.
import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, freePort, waitFor, spawnGroup } from '@dlock/testing';

/** Under the repository (.tmp/ is ignored), so the output resolves node_modules as dist/ does. */
const outDir = path.join(REPO_ROOT, '.tmp', `nest-build-${process.pid}`);

function run(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawnGroup(cmd, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => resolve({ code, output }));
  });
}

describe('npx nest build <app>', () => {
  let app: ChildProcess | undefined;

  beforeAll(() => mkdirSync(outDir, { recursive: true }));
  afterAll(() => {
    app?.kill('SIGKILL');
    rmSync(outDir, { recursive: true, force: true });
  });

  it('emits dist/apps/rail-stub/main.js, which boots and answers /health/live', async () => {
    // The app's own tsconfig, only the output directory moved.
    const tsconfig = path.join(outDir, 'tsconfig.json');
    writeFileSync(
      tsconfig,
      JSON.stringify({
        extends: path.join(REPO_ROOT, 'apps', 'rail-stub', 'tsconfig.app.json'),
        compilerOptions: { outDir: path.join(outDir, 'dist') },
      }),
    );
    const nest = path.join(REPO_ROOT, 'node_modules', '.bin', 'nest');
    // --path is read relative to the workspace.
    const build = await run(nest, [
      'build',
      'rail-stub',
      '--path',
      path.relative(REPO_ROOT, tsconfig),
    ]);
    expect(build.code === 0 ? 'built' : build.output).toBe('built');
    const main = path.join(outDir, 'dist', 'apps', 'rail-stub', 'main.js');
    expect(existsSync(main)).toBe(true);
    expect(existsSync(path.join(outDir, 'dist', 'libs', 'config', 'src', 'index.js'))).toBe(true);

    const port = await freePort();
    app = spawnGroup(process.execPath, [main], {
      cwd: outDir,
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        PORT: String(port),
        RAIL_STUB_JOURNAL_PATH: path.join(outDir, 'journal.jsonl'),
        RAIL_STUB_JOURNAL_FSYNC: 'false',
      },
      stdio: 'ignore',
    });
    const live = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/health/live`);
        return res.ok ? await res.json() : undefined;
      },
      60_000,
      'the nest-built rail-stub to listen',
    );
    expect(live).toMatchObject({ status: 'ok' });
  }, 300_000);
});
