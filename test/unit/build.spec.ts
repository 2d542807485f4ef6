import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';

/**
 * scripts/build.js (run by `npm run build`, `npm start` and `npm test`) is
 * incremental: a second build with nothing changed is a no-op, and after any
 * change dist/ is what a build from scratch would give (README, "The two
 * commands"). Run on a checkout of two files with the real script, tsc and
 * tsc-alias.
 */
jest.setTimeout(60_000);

function checkout(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dlock-build-'));
  mkdirSync(path.join(dir, 'scripts'));
  for (const f of ['build.js', 'tsconfig.incremental.json'])
    copyFileSync(path.join(REPO_ROOT, 'scripts', f), path.join(dir, 'scripts', f));
  const modules = path.join(dir, 'node_modules');
  mkdirSync(path.join(modules, '.bin'), { recursive: true });
  for (const tool of ['tsc', 'tsc-alias'])
    symlinkSync(
      path.join(REPO_ROOT, 'node_modules', '.bin', tool),
      path.join(modules, '.bin', tool),
    );
  writeFileSync(path.join(modules, '.package-lock.json'), '{}');
  const old = new Date(Date.now() - 60_000);
  utimesSync(path.join(modules, '.package-lock.json'), old, old);
  writeFileSync(
    path.join(dir, 'tsconfig.build.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'commonjs',
        target: 'ES2022',
        outDir: './dist',
        rootDir: '.',
        baseUrl: '.',
        types: [],
        // A lib of its own, a few lines long: each tsc run here takes a second, not five.
        noLib: true,
        paths: { '@demo/lib': ['libs/lib/src'] },
      },
      include: ['apps', 'libs', 'lib.d.ts'],
    }),
  );
  write(
    dir,
    'lib.d.ts',
    ['Array<T>', 'Boolean', 'Function', 'IArguments', 'Number', 'Object', 'RegExp', 'String']
      .map((t) => `interface ${t} {}\n`)
      .join('') + 'declare const console: { log(text: string): void };\n',
  );
  write(dir, 'libs/lib/src/index.ts', `export const word = 'one';\n`);
  write(dir, 'apps/app/main.ts', `import { word } from '@demo/lib';\nconsole.log(word);\n`);
  write(dir, 'apps/app/static/page.html', 'page one');
  return dir;
}

function write(dir: string, file: string, text: string): void {
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), text);
}

const build = (dir: string, ...args: string[]) =>
  execFileSync(process.execPath, [path.join(dir, 'scripts', 'build.js'), ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
  })
    .toString()
    .trim();

const runApp = (dir: string) =>
  execFileSync(process.execPath, [path.join(dir, 'dist', 'apps', 'app', 'main.js')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString();

const mtimeOf = (dir: string, file: string) => statSync(path.join(dir, 'dist', file)).mtimeMs;

describe('npm run build (scripts/build.js)', () => {
  let dir: string;
  beforeEach(() => (dir = checkout()));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('builds from nothing, then finds nothing to do and touches no output', () => {
    expect(build(dir)).toBe('[dlock] build complete: dist/apps/<app>/main.js');
    expect(runApp(dir)).toBe('one\n');
    const before = mtimeOf(dir, 'apps/app/main.js');
    expect(build(dir)).toBe('[dlock] build up to date: dist/apps/<app>/main.js');
    expect(mtimeOf(dir, 'apps/app/main.js')).toBe(before);
    expect(runApp(dir)).toBe('one\n');
  });

  it('after a change to a source, a removed source or an asset, dist is what a clean build gives', () => {
    build(dir);
    write(dir, 'libs/lib/src/index.ts', `export const word = 'two';\n`);
    write(dir, 'libs/lib/src/gone.ts', `export const gone = 1;\n`);
    build(dir);
    expect(runApp(dir)).toBe('two\n');
    expect(existsSync(path.join(dir, 'dist', 'libs', 'lib', 'src', 'gone.js'))).toBe(true);

    rmSync(path.join(dir, 'libs', 'lib', 'src', 'gone.ts'));
    rmSync(path.join(dir, 'apps', 'app', 'static', 'page.html'));
    write(dir, 'apps/app/static/other.html', 'other');
    build(dir);
    const left = (f: string) => existsSync(path.join(dir, 'dist', f));
    expect({
      gone: left('libs/lib/src/gone.js'),
      goneMap: left('libs/lib/src/gone.js.map'),
      page: left('apps/app/static/page.html'),
      other: left('apps/app/static/other.html'),
    }).toEqual({ gone: false, goneMap: false, page: false, other: true });
  });

  it('rebuilds everything when an output is missing or the installed packages changed', () => {
    build(dir);
    rmSync(path.join(dir, 'dist', 'libs', 'lib', 'src', 'index.js'));
    expect(build(dir)).toBe('[dlock] build complete: dist/apps/<app>/main.js');
    expect(runApp(dir)).toBe('one\n');

    writeFileSync(path.join(dir, 'node_modules', '.package-lock.json'), '{"changed":1}');
    const before = mtimeOf(dir, 'libs/lib/src/index.js');
    expect(build(dir)).toBe('[dlock] build complete: dist/apps/<app>/main.js');
    expect(mtimeOf(dir, 'libs/lib/src/index.js')).toBeGreaterThan(before);
  });

  it('finishes a build interrupted between tsc and tsc-alias', () => {
    build(dir);
    write(dir, 'libs/lib/src/index.ts', `export const word = 'three';\n`);
    // tsc ran (its build info is new), the alias rewrite and the stamp did not.
    execFileSync(
      path.join(dir, 'node_modules', '.bin', 'tsc'),
      ['-b', path.join(dir, 'scripts', 'tsconfig.incremental.json')],
      { cwd: dir },
    );
    expect(() => runApp(dir)).toThrow(/Cannot find module '@demo\/lib'/);
    expect(build(dir)).toBe('[dlock] build complete: dist/apps/<app>/main.js');
    expect(runApp(dir)).toBe('three\n');
  });
});
