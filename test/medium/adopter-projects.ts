// The three kinds of Nest project a team starts today, made by their own `nest new` (once per
// machine: scripts/adopter-templates.ts) and given dlock's tarballs with docs/extending.md's
// install lines, word for word
// (test/medium/installed-packages.spec.ts runs them). Each runs the example's own specs
// (examples/refund-sender/src/*.spec.ts) under its project's runner: Vitest or Jest.
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';
import {
  ADOPTERS,
  guideBlock,
  guideCommands,
  NPM_ENV as TEMPLATE_NPM_ENV,
  templateDir,
  type AdopterKind,
} from '../../scripts/adopter-templates';

export type Run = (
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs?: number,
) => Promise<{ code: number | null; out: string }>;

export { ADOPTERS, guideBlock, guideCommands, templateDir, type AdopterKind };

/**
 * npm as a team runs it, offline: the templates' making filled npm's cache with everything the
 * guide's lines install (scripts/adopter-templates.ts), and a test reaches nothing but loopback.
 */
export const NPM_ENV = { ...TEMPLATE_NPM_ENV, npm_config_offline: 'true' };

/** The guide's build and migration commands follow this line ("6. Migrations"). */
export const MIGRATIONS = 'Point the CLI at the compiled file';
/** The migration command's prefix there; the test gives its own database instead of the example URL. */
export const DATABASE_URL = 'REFUNDS_DATABASE_URL=';

/**
 * The guide's Jest settings for Node.js before 24.9 (docs/extending.md, "Jest"): set on the
 * template's configuration as they stand, the rest of it untouched.
 */
function applyJestSettings(project: string, where: 'jest.config.ts' | 'package.json'): void {
  const settings = JSON.parse(`{${guideBlock('Jest settings:', 'json')}}`) as object;
  const file = path.join(project, where);
  if (where === 'package.json') {
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { jest: object };
    writeFileSync(file, JSON.stringify({ ...pkg, jest: { ...pkg.jest, ...settings } }, null, 2));
    return;
  }
  const text = readFileSync(file, 'utf8');
  const end = 'export default config;';
  if (!text.includes(end)) throw new Error(`${where}: no "${end}"`);
  writeFileSync(
    file,
    text.replace(end, `Object.assign(config, ${JSON.stringify(settings)});\n${end}`),
  );
}

/** ESM (Nest 12's default) imports relative files with their `.js`, as `nest new` writes main.ts. */
export function withJsExtensions(source: string): string {
  return source.replace(/(from\s+|import\s+)(['"])(\.{1,2}\/[^'"]+?)(?<!\.js)\2/g, '$1$2$3.js$2');
}

/** The example's sources (its app and its two specs) into the project's src/, beside the template's. */
export function copyExample(project: string, esm: boolean): void {
  const from = path.join(REPO_ROOT, 'examples', 'refund-sender', 'src');
  const to = path.join(project, 'src');
  cpSync(from, to, { recursive: true });
  if (!esm) return;
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(to, path.relative(from, path.join(entry.parentPath, entry.name)));
    writeFileSync(file, withJsExtensions(readFileSync(file, 'utf8')));
  }
}

export interface Adopter {
  kind: AdopterKind;
  project: string;
  /** PATH with the project's Node.js first, and npm's settings. */
  env: Record<string, string>;
  /** How long each step took, for the record. */
  steps: { what: string; ms: number }[];
}

/**
 * Makes one project as its kind is made, installs dlock's tarballs with the guide's lines, adds
 * the example and builds it with the project's own `npm run build`. Throws naming the step.
 */
export async function makeAdopter(
  kind: AdopterKind,
  work: string,
  packagesDir: string,
  run: Run,
  baseEnv: Record<string, string>,
): Promise<Adopter> {
  const env = { ...baseEnv, ...NPM_ENV };
  const parent = path.join(work, kind.name);
  mkdirSync(parent, { recursive: true });
  const project = path.join(parent, 'refunds');
  const steps: { what: string; ms: number }[] = [];
  const step = async (what: string, cmd: string, args: string[], cwd = project) => {
    const startedMs = Date.now();
    const result = await run(cmd, args, cwd, env, 300_000);
    steps.push({ what, ms: Date.now() - startedMs });
    if (process.env.ADOPTER_STEPS_LOG)
      appendFileSync(
        process.env.ADOPTER_STEPS_LOG,
        `${kind.name} ${what}: ${result.code} ${Date.now() - startedMs} ms\n`,
      );
    if (result.code !== 0)
      throw new Error(`${kind.name}: ${what} exited ${result.code}\n${result.out}`);
    return result.out;
  };
  // `nest new` and its install, made once per machine by npm test's install step.
  const template = templateDir(kind);
  if (!existsSync(template))
    throw new Error(
      `${kind.name}: no template at ${template}: run node dist/scripts/adopter-templates.js`,
    );
  await step('copy the template', 'cp', ['-a', template, project], parent);
  // "Copy them next to your project" (docs/extending.md, "1. Install").
  cpSync(packagesDir, path.join(project, 'dlock-packages'), { recursive: true });
  for (const line of guideCommands('From tarballs.')) await step(line, 'sh', ['-c', line]);
  if (kind.jestConfig) {
    for (const line of guideCommands('Jest settings:')) await step(line, 'sh', ['-c', line]);
    applyJestSettings(project, kind.jestConfig);
  }
  await step('npm ls', 'npm', ['ls']);
  copyExample(project, kind.esm);
  for (const line of guideCommands(MIGRATIONS).filter((l) => !l.startsWith(DATABASE_URL)))
    await step(line, 'sh', ['-c', line]);
  return { kind, project, env, steps };
}
