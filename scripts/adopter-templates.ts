// The adopters' projects as `nest new` makes them, installed once per machine (an install step
// of `npm test`, like etcd and Chromium: README, "Tests"). The installed-packages test
// (test/medium/installed-packages.spec.ts) copies a template and goes on from there with the
// guide's own lines, offline: a test talks to nothing but loopback, and a fresh `nest new` plus
// its install are a minute each of a run's budget. Making a template also runs the guide's install
// lines once in a scratch copy, so npm's cache holds everything the test will install.
//   node dist/scripts/adopter-templates.js      (pretest runs it; nothing to do when present)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import assert from 'node:assert';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The repository: one level up from the source, two from dist/scripts/. */
function repositoryRoot(): string {
  const root = [path.resolve(__dirname, '..'), path.resolve(__dirname, '..', '..')].find((dir) =>
    existsSync(path.join(dir, 'docs', 'extending.md')),
  );
  assert(root !== undefined, 'adopter-templates: the repository root was not found');
  return root;
}
const ROOT = repositoryRoot();
const GUIDE = path.join(ROOT, 'docs', 'extending.md');

export interface AdopterKind {
  name: string;
  /** How its kind is made: `npx @nestjs/cli@<major> new` and its own flags, installing nothing yet. */
  scaffold: string[];
  esm: boolean;
  /** Where its Jest configuration lives, if Jest is its runner; Vitest needs nothing. */
  jestConfig?: 'jest.config.ts' | 'package.json';
}

/** The flags that keep `nest new` from asking or installing; Nest 12's CLI asks more than 11's. */
const NEW = ['--skip-git', '--skip-install', '--package-manager', 'npm'];
const NEST_12_NEW = [...NEW, '--no-interactive', '--skip-skills', '--no-observe'];

/** The three kinds of Nest project a team starts today (docs/extending.md, "1. Install"). */
export const ADOPTERS: AdopterKind[] = [
  {
    name: 'nest12-esm-vitest',
    scaffold: ['@nestjs/cli@12', 'new', 'refunds', ...NEST_12_NEW, '--type', 'esm'],
    esm: true,
  },
  {
    name: 'nest12-cjs-jest',
    scaffold: ['@nestjs/cli@12', 'new', 'refunds', ...NEST_12_NEW, '--type', 'cjs'],
    esm: false,
    jestConfig: 'jest.config.ts',
  },
  {
    name: 'nest11-cjs-jest',
    scaffold: ['@nestjs/cli@11', 'new', 'refunds', ...NEW, '--strict'],
    esm: false,
    jestConfig: 'package.json',
  },
];

/** npm as a team runs it, minus the noise. */
export const NPM_ENV = {
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

/** The body of the first ```<lang> block after the line holding `marker` in docs/extending.md. */
export function guideBlock(marker: string, lang: string): string {
  const text = readFileSync(GUIDE, 'utf8');
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`docs/extending.md has no "${marker}"`);
  const open = text.indexOf(`\`\`\`${lang}\n`, at);
  const close = text.indexOf('\n```', open);
  if (open < 0 || close < 0) throw new Error(`no \`\`\`${lang} block after "${marker}"`);
  return text.slice(open + lang.length + 4, close);
}

/** The ```sh block of docs/extending.md that follows the line holding `marker`, one command a line. */
export function guideCommands(marker: string): string[] {
  return guideBlock(marker, 'sh')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

/** The guide's install lines a template's scratch copy runs to fill npm's cache. */
function installLines(kind: AdopterKind): string[] {
  return [
    ...guideCommands('From tarballs.'),
    ...(kind.jestConfig ? guideCommands('Jest settings:') : []),
  ];
}

/**
 * What a template depends on: its kind, the guide's install lines, the packages' dependencies and
 * Node.js. Any change makes a new template (and fills the cache again), never a stale one.
 */
function templateKey(kind: AdopterKind): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(kind));
  hash.update(JSON.stringify(installLines(kind)));
  hash.update(process.version);
  const workspaces = (
    JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      workspaces: string[];
    }
  ).workspaces;
  for (const dir of workspaces) {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as object;
    hash.update(JSON.stringify(pkg));
  }
  return hash.digest('hex').slice(0, 16);
}

const cacheRoot = () =>
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'dlock', 'adopters');

/** The installed `nest new` project of `kind` (its `refunds/` directory), made or not. */
export function templateDir(kind: AdopterKind): string {
  return path.join(cacheRoot(), `${kind.name}-${templateKey(kind)}`, 'refunds');
}

function sh(what: string, cmd: string, args: string[], cwd: string): void {
  try {
    execFileSync(cmd, args, {
      cwd,
      env: { ...process.env, ...NPM_ENV },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer; message: string };
    const out = `${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}`;
    throw new Error(`${what} failed: ${e.message}\n${out}`, { cause: err });
  }
}

/** Makes one template beside its final place, then moves it there whole. */
function makeTemplate(kind: AdopterKind, packagesDir: string): void {
  const final = path.dirname(templateDir(kind));
  const building = `${final}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const project = path.join(building, 'refunds');
  sh(`${kind.name}: nest new`, 'npx', ['--yes', ...kind.scaffold], building);
  sh(`${kind.name}: npm install`, 'npm', ['install'], project);
  const scratch = path.join(building, 'scratch');
  cpSync(project, scratch, { recursive: true, verbatimSymlinks: true });
  cpSync(packagesDir, path.join(scratch, 'dlock-packages'), { recursive: true });
  for (const line of installLines(kind)) sh(`${kind.name}: ${line}`, 'sh', ['-c', line], scratch);
  // rm(1) is many times faster than rmSync on a node_modules tree.
  sh('rm the scratch copy', 'rm', ['-rf', scratch], building);
  // A template made for an older key is no longer used by anything.
  for (const old of readdirSync(cacheRoot()))
    if (old.startsWith(`${kind.name}-`) && !old.includes('.'))
      rmSync(path.join(cacheRoot(), old), { recursive: true, force: true });
  try {
    renameSync(building, final);
  } catch {
    // Another run made it first: theirs serves as well.
    rmSync(building, { recursive: true, force: true });
  }
}

/** Every kind's template present; makes the missing ones (a network install, minutes). */
export function ensureTemplates(log: (line: string) => void): void {
  const missing = ADOPTERS.filter((kind) => !existsSync(templateDir(kind)));
  if (missing.length === 0) return;
  log(
    `[dlock] making the adopter templates for the installed-packages test: ${missing.map((k) => k.name).join(', ')} ...`,
  );
  const packagesDir = path.join(cacheRoot(), `packages.${process.pid}`);
  sh(
    'npm run pack:libs',
    process.execPath,
    ['scripts/packages.js', 'pack', '--out', packagesDir],
    ROOT,
  );
  try {
    for (const kind of missing) makeTemplate(kind, packagesDir);
  } finally {
    rmSync(packagesDir, { recursive: true, force: true });
  }
}

if (require.main === module) ensureTemplates((line) => console.log(line));
