import { existsSync, readdirSync, rmSync } from 'node:fs';
import workers from './workers.js';

/** Kills the process groups a worker that died before its file ended left behind (libs/testing/src/children.ts). */
function killLeftGroups() {
  const dir = process.env.DLOCK_TEST_PIDS_DIR;
  if (dir === undefined || !existsSync(dir)) return;
  for (const name of readdirSync(dir, { withFileTypes: true }).map((e) => e.name)) {
    try {
      process.kill(-Number(name), 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

export default async function globalTeardown() {
  workers.forgetThisRun();
  killLeftGroups();
  const scratch = process.env.DLOCK_TEST_SCRATCH_DIR;
  if (scratch) {
    rmSync(scratch, { recursive: true, force: true });
    // A one-worker run runs its files in this process: a late callback of one of them can
    // still write there before jest exits (test/workers.js).
    process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
  }
  const state = globalThis.__DLOCK_PG__;
  if (state) {
    await state.pg.stop().catch(() => undefined);
    if (state.dir) rmSync(state.dir, { recursive: true, force: true });
  }
  // Last: the run's containers are gone by now (test-backends.js, startTestNetwork).
  await globalThis.__DLOCK_NETWORK__?.stop().catch(() => undefined);
}
