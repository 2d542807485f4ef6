import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh directory for what a test writes (a stub's journal, keys, a policy
 * file). Under jest it is inside the run's scratch directory
 * (test/global-setup.mjs), which the run's teardown removes, also after a
 * failure; elsewhere it is removed when this process exits.
 */
export function scratchDir(prefix: string): string {
  const runScratch = process.env.DLOCK_TEST_SCRATCH_DIR;
  const dir = mkdtempSync(join(runScratch ?? tmpdir(), prefix));
  if (runScratch === undefined) {
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return dir;
}
