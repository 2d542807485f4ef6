// How many test files jest runs at once (jest.config.js). A run that has the
// machine to itself takes one file more than it has cores: the longest files
// spend much of their time waiting on processes they started (jest 422-475 s
// against 522 s with two workers on two cores). Beside another dlock test run
// it takes half the cores, so two runs side by side hold no more files at once
// than two two-worker runs did, which pass together (CONTRIBUTING.md, "Before
// a change lands").
//
// A run is noted in RUNS_DIR under the pid of the `npm test` around it, first
// thing in pretest (`node test/workers.js --note`): noted when jest starts, two
// runs started together would each still be in pretest when the other's jest
// counted, and both take the whole machine. jest.config.js and the global
// teardown find the same npm process (jest alone, without npm: its own pid).
// A dead run's note is ignored and removed.
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

/** The parent's pid from /proc/<pid>/stat: the field after the command, which may hold ')' itself. */
function parentPid(stat) {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** npm sets its title to its command ("npm test", "npm exec jest ..."). */
function isNpm(cmdline) {
  return /^npm(\s|\0|$)/.test(cmdline);
}

const readProc = (pid, file) => fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');

/** The pid of the nearest npm process among pid's ancestors (pid itself included), else pid. */
function runKey(pid = process.pid, read = readProc) {
  for (let p = pid; p > 1;) {
    try {
      if (isNpm(read(p, 'cmdline'))) return p;
      p = parentPid(read(p, 'stat'));
    } catch {
      break; // no /proc, or the ancestor is gone
    }
  }
  return pid;
}

function noteThisRun() {
  fs.mkdirSync(RUNS_DIR, { recursive: true });
  fs.writeFileSync(path.join(RUNS_DIR, String(runKey())), '');
}

/** Notes this run (again: jest may run without npm), then counts the others that are alive. */
function otherRuns() {
  noteThisRun();
  const self = runKey();
  const others = [];
  for (const name of fs.readdirSync(RUNS_DIR)) {
    const pid = Number(name);
    if (pid === self) continue;
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
  fs.rmSync(path.join(RUNS_DIR, String(runKey())), { force: true });
}

module.exports = { testWorkers, forgetThisRun, runKey, parentPid };

if (require.main === module && process.argv.includes('--note')) noteThisRun();
