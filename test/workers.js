// How many test files jest runs at once (jest.config.js). A run that has the
// machine to itself takes one file more than it has cores: the longest files
// spend much of their time waiting on processes they started (jest 422-475 s
// against 522 s with two workers on two cores). Beside another dlock test run
// it takes half the cores, so two runs side by side hold no more files at once
// than two two-worker runs did, which pass together (CONTRIBUTING.md, "Before
// a change lands"). Each run notes its pid in RUNS_DIR; the global teardown
// removes the note, a dead run's note is ignored and removed here.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const RUNS_DIR = path.join(os.tmpdir(), 'dlock-test-runs');

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Notes this run first, then counts the others: two runs starting together both see each other. */
function otherRuns() {
  fs.mkdirSync(RUNS_DIR, { recursive: true });
  fs.writeFileSync(path.join(RUNS_DIR, String(process.pid)), '');
  const others = [];
  for (const name of fs.readdirSync(RUNS_DIR)) {
    const pid = Number(name);
    if (pid === process.pid) continue;
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) others.push(pid);
    else fs.rmSync(path.join(RUNS_DIR, name), { force: true });
  }
  return others;
}

function testWorkers() {
  const cores = os.availableParallelism();
  return otherRuns().length === 0 ? cores + 1 : Math.max(1, Math.floor(cores / 2));
}

/** Called by the global teardown. */
function forgetThisRun() {
  fs.rmSync(path.join(RUNS_DIR, String(process.pid)), { force: true });
}

module.exports = { testWorkers, forgetThisRun };
