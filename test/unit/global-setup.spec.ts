import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, freePort, runNode, scratchDir } from '@dlock/testing';

/**
 * jest runs no global teardown when the global setup fails, so the setup
 * undoes itself: a run that cannot reach its PostgreSQL leaves neither its
 * scratch directory nor its process-group notes behind (CONTRIBUTING.md,
 * "Before a change lands").
 */

/** Runs test/global-setup.mjs alone, as jest would, and reports the directories it made. */
const DRIVER = `
import(process.argv[2]).then(
  (setup) => setup.default(),
).then(
  () => console.log(JSON.stringify({ ok: true })),
  (err) => console.log(JSON.stringify({
    ok: false,
    message: String(err && err.message),
    scratch: process.env.DLOCK_TEST_SCRATCH_DIR,
    pids: process.env.DLOCK_TEST_PIDS_DIR,
  })),
);`;

describe('the global setup', () => {
  it('removes what it made when PostgreSQL cannot be reached', async () => {
    // Its own temp dir: the setup's scratch directory and run notes land there, not beside this run's.
    const tmp = scratchDir('global-setup-');
    const closedPort = await freePort();
    const driver = path.join(tmp, 'driver.mjs');
    writeFileSync(driver, DRIVER);
    const { out } = await runNode(
      driver,
      [path.join(REPO_ROOT, 'test', 'global-setup.mjs')],
      {
        TMPDIR: tmp,
        DLOCK_TEST_PG_URL: `postgres://postgres:postgres@127.0.0.1:${closedPort}/postgres`,
      },
      30_000,
    );
    const outcome = JSON.parse(out.split('\n').find((line) => line.startsWith('{')) ?? '{}');
    expect(outcome).toEqual(
      expect.objectContaining({ ok: false, message: expect.stringContaining('ECONNREFUSED') }),
    );
    expect(outcome.scratch).toMatch(new RegExp(`^${tmp}/dlock-test-run-`));
    expect(existsSync(outcome.scratch)).toBe(false);
    expect(outcome.pids).toMatch(/test-pids-\d+$/);
    expect(existsSync(outcome.pids)).toBe(false);
    expect(readdirSync(tmp).filter((name) => name.startsWith('dlock-test-run-'))).toEqual([]);
  });
});
