'use strict';
// The node environment, plus: when a test file ends, passed or failed, every
// process group it started and did not stop is killed (libs/testing/src/children.ts).
const { rmSync } = require('node:fs');
const path = require('node:path');
const { TestEnvironment } = require('jest-environment-node');

class DlockTestEnvironment extends TestEnvironment {
  async teardown() {
    const spawned = this.global.__dlockSpawned;
    for (const pid of spawned ?? []) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      const dir = process.env.DLOCK_TEST_PIDS_DIR;
      if (dir !== undefined) rmSync(path.join(dir, String(pid)), { force: true });
    }
    await super.teardown();
  }
}

module.exports = DlockTestEnvironment;
