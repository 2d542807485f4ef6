import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, waitFor, spawnGroup } from '@dlock/testing';
import { alive } from '../../scripts/start-processes';

/**
 * The process run of `npm start` (scripts/start-processes.ts) with stand-in
 * members: a supervisor that starts a worker, a service, a "database" and a
 * worker that ignores SIGTERM, through the built module, as start.mjs does.
 * Stopped cleanly, the supervisor takes them down in order; killed with
 * SIGKILL, its watchdog does the same, so nothing lives on unowned (README,
 * "Stopping").
 */
jest.setTimeout(60_000);

const DEADLINE_MS = 1_500;
const built = (file: string) => path.join(REPO_ROOT, 'dist', 'scripts', file);

/** A member: notes each signal it gets, then leaves 200 ms later, unless told to hold on. */
const MEMBER = `
const fs = require('node:fs');
const [name, file, stubborn] = process.argv.slice(2);
const note = (what) => fs.appendFileSync(file, name + ' ' + what + '\\n');
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => {
  note(s);
  if (stubborn !== 'stubborn') setTimeout(() => { note('exit'); process.exit(0); }, 200);
});
note('up');
setInterval(() => {}, 1000);
`;

/** The supervisor: the run, four members, "ready"; SIGINT stops it all in order. */
const SUPERVISOR = `
const { ProcessRun } = require(${JSON.stringify(built('start-processes.js'))});
const [dir, memberScript] = process.argv.slice(2);
const run = new ProcessRun(${DEADLINE_MS}, (line) => console.log(line), 500);
run.startWatchdog(${JSON.stringify(built('start-watchdog.js'))}, dir + '/watchdog.log');
const member = (name, tier, stopSignal, stubborn) =>
  run.spawn(name, tier, process.execPath, [memberScript, name, dir + '/notes', stubborn ?? ''], {
    cwd: dir, env: process.env, logFile: dir + '/' + name + '.log', stopSignal });
const pids = [
  member('database', 'database', 'SIGINT'),
  member('service', 'service'),
  member('worker', 'worker'),
  member('stubborn', 'worker', undefined, 'stubborn'),
].map((p) => p.pid);
process.on('SIGINT', () => run.stopAll().then(() => { console.log('stopped'); process.exit(0); }));
setTimeout(() => console.log('ready ' + pids.join(' ')), 500);
`;

interface Supervisor {
  proc: ChildProcess;
  dir: string;
  pids: number[];
  output(): string;
}

let started: Supervisor[] = [];

async function supervisor(): Promise<Supervisor> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dlock-watchdog-'));
  writeFileSync(path.join(dir, 'member.js'), MEMBER);
  writeFileSync(path.join(dir, 'supervisor.js'), SUPERVISOR);
  const proc = spawnGroup(process.execPath, ['supervisor.js', dir, path.join(dir, 'member.js')], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const s: Supervisor = { proc, dir, pids: [], output: () => out };
  started.push(s);
  const ready = await waitFor(async () => /ready ([\d ]+)/.exec(out), 20_000, 'the members');
  s.pids = ready[1].split(' ').map(Number);
  // Each member's signal handlers are in place (a loaded machine starts node slowly).
  const up = async () => allNotes(s).filter((n) => n.endsWith(' up')).length === 4;
  await waitFor(up, 20_000, 'the members up');
  return s;
}

/** Everything the members noted, "<name> up" included. */
const allNotes = (s: Supervisor) => {
  const file = path.join(s.dir, 'notes');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : [];
};

/** The order the members noted their signals and exits in. */
const notes = (s: Supervisor) => allNotes(s).filter((n) => !n.endsWith(' up'));

const ORDERLY = [
  // Workers first (the stubborn one is killed at the deadline), then the service, the database last.
  expect.stringMatching(/^(worker|stubborn) SIGTERM$/),
  expect.stringMatching(/^(worker|stubborn) SIGTERM$/),
  'worker exit',
  'service SIGTERM',
  'service exit',
  'database SIGINT',
  'database exit',
];

afterEach(() => {
  for (const s of started) {
    for (const pid of [s.proc.pid!, ...s.pids]) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(s.dir, { recursive: true, force: true });
  }
  started = [];
});

describe('npm start: the process run and its watchdog', () => {
  it('a stopping supervisor takes its members down in order, then its watchdog ends doing nothing', async () => {
    const s = await supervisor();
    process.kill(s.proc.pid!, 'SIGINT');
    await waitFor(async () => s.output().includes('stopped'), 20_000, 'the stop');
    expect(notes(s)).toEqual(ORDERLY);
    expect(s.output()).toContain(`stubborn (pid ${s.pids[3]}) still running`);
    // Each tier is named as its stop begins, and who is still awaited while it lasts.
    const said = s.output().split('\n');
    expect(said.filter((l) => l.startsWith('stopping '))).toEqual([
      'stopping worker, stubborn ...',
      'stopping service ...',
      'stopping database ...',
    ]);
    expect(said).toContainEqual(
      expect.stringMatching(/^waiting for stubborn \(\d s; SIGKILL at 1\.5 s\)$/),
    );
    expect(s.pids.filter(alive)).toEqual([]);
    await waitFor(async () => s.proc.exitCode !== null, 5_000, 'the supervisor to exit');
    expect(readFileSync(path.join(s.dir, 'watchdog.log'), 'utf8')).toBe('');
  });

  it('a supervisor killed with SIGKILL leaves nothing: its watchdog stops the members in the same order', async () => {
    const s = await supervisor();
    process.kill(-s.proc.pid!, 'SIGKILL');
    await waitFor(
      async () => s.pids.every((pid) => !alive(pid)),
      4 * DEADLINE_MS + 10_000,
      'every member to be gone',
    );
    expect(notes(s)).toEqual(ORDERLY);
    const log = () => readFileSync(path.join(s.dir, 'watchdog.log'), 'utf8');
    await waitFor(async () => /Z stopped$/m.test(log()), 5_000, 'the watchdog to finish');
    expect(log()).toMatch(
      new RegExp(`the supervisor \\(pid ${s.proc.pid}\\) is gone; stopping the 4 process\\(es\\)`),
    );
    expect(log()).toContain(`stubborn (pid ${s.pids[3]}) still running`);
  });
});
