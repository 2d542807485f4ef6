// Shared helpers for the offline deployment checks. The tools are installed by
// scripts/ensure-deploy-tools.js (npm pretest); a missing one fails the test
// with the way to get it, never skips it.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const repoRoot = join(__dirname, '..', '..', '..');
const toolsBin = join(repoRoot, '.dlock', 'deploy-tools', 'bin');

export function findTool(name: string): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), toolsBin]) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

export function requireTool(name: string): string {
  const found = findTool(name);
  if (!found) {
    throw new Error(
      `${name} is required by test/unit/deploy; run \`node scripts/ensure-deploy-tools.js\` (it installs or explains how to get it)`,
    );
  }
  return found;
}

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a tool with a deadline; returns its status and output instead of throwing. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): RunResult {
  try {
    const stdout = execFileSync(cmd, args, {
      cwd: opts.cwd ?? repoRoot,
      env: opts.env ?? process.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    return { status: 0, stdout, stderr: '' };
  } catch (err) {
    const e = err as { status?: number | null; stdout?: string; stderr?: string };
    return { status: e.status ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

export function readRepoFile(path: string): string {
  return readFileSync(join(repoRoot, path), 'utf8');
}

/** Every YAML document in a string, as plain objects (empty documents dropped). */
export function parseYamlDocs(text: string): Record<string, any>[] {
  return parseAllDocuments(text, { merge: true })
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('\n'));
      return doc.toJS() as Record<string, any> | null;
    })
    .filter((d): d is Record<string, any> => d !== null && typeof d === 'object');
}

export function parseYamlFile(path: string): Record<string, any> {
  const docs = parseYamlDocs(readRepoFile(path));
  if (docs.length !== 1) throw new Error(`${path}: expected one YAML document, got ${docs.length}`);
  return docs[0];
}
