// What the installed-packages test makes (packed libraries, installed projects), kept once per
// machine under a key of everything it is made from: the same inputs make the same output, so a
// run whose inputs did not change takes the earlier output, and any change makes it anew. Beside
// the adopters' templates (scripts/adopter-templates.ts), which are made the same way.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '@dlock/testing';

/** Never part of what a package, project or guide is made from. */
const SKIPPED = new Set(['node_modules', 'dist', '.tmp', 'coverage']);
/** An entry not used for this long is removed by the next one made (a set is about 1 GB). */
const UNUSED_FOR_MS = 24 * 3_600_000;

const cacheRoot = () =>
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'dlock', 'made');

/** Every file under `paths` (files or directories), sorted: the content that `make` reads. */
function filesOf(paths: string[]): string[] {
  const files: string[] = [];
  const pending = [...paths];
  while (pending.length > 0) {
    const p = pending.pop()!;
    if (!statSync(p).isDirectory()) {
      files.push(p);
      continue;
    }
    for (const e of readdirSync(p, { withFileTypes: true }))
      if (!SKIPPED.has(e.name)) pending.push(path.join(p, e.name));
  }
  return files.sort();
}

/**
 * A key of the files under `paths` (names and contents) and of `also` (versions, settings).
 * Names relative to the repository: what is made from them names no checkout (the installed
 * packages are checked for that), so every checkout on the machine, a worktree or a CI job's
 * fresh clone elsewhere, shares what one of them made.
 */
export function contentKey(paths: string[], also: unknown[] = []): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([process.version, ...also]));
  for (const file of filesOf(paths)) {
    hash.update(path.relative(REPO_ROOT, file));
    hash.update(readFileSync(file));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The directory made by `make` for `name` and `key`: made beside its final place, then moved
 * there whole, so a run never sees half of one; a failed make leaves nothing behind.
 */
export async function madeOnce(
  name: string,
  key: string,
  make: (dir: string) => Promise<void>,
): Promise<string> {
  const final = path.join(cacheRoot(), `${name}-${key}`);
  if (existsSync(final)) {
    // Used now: not removed as unused while this run copies from it.
    const now = new Date();
    utimesSync(final, now, now);
    return final;
  }
  const building = `${final}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    await make(building);
  } catch (err) {
    await rm(building, { recursive: true, force: true });
    throw err;
  }
  try {
    renameSync(building, final);
  } catch {
    // Another run made it first: theirs serves as well.
    await rm(building, { recursive: true, force: true });
  }
  await removeUnused();
  return final;
}

/** Entries no run has made or used in a day (madeOnce sets an entry's mtime on each use). */
async function removeUnused(): Promise<void> {
  const now = Date.now();
  for (const entry of readdirSync(cacheRoot())) {
    const dir = path.join(cacheRoot(), entry);
    if (now - statSync(dir).mtimeMs > UNUSED_FOR_MS)
      await rm(dir, { recursive: true, force: true });
  }
}
