/**
 * The processes of one `npm start` (scripts/start.mjs) and how they stop
 * (README, "Stopping"). Each child runs in a process group of its own
 * (`detached`), so Ctrl-C, which the terminal sends to its foreground group,
 * reaches the supervisor alone; the supervisor then stops them in order:
 * one-shot tasks and workers, then services, then the database, each tier
 * with its stop signal, SIGKILL to its group past the deadline. A watchdog
 * process (start-watchdog.ts) is told every pid and does the same if the
 * supervisor itself dies without stopping them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export type Tier = 'task' | 'worker' | 'service' | 'database';
const TIERS: readonly string[] = ['task', 'worker', 'service', 'database'];

/**
 * Workers first, while the services still answer their releases and session closes; the
 * services next, while the database still answers them; the database last.
 */
export const STOP_ORDER: readonly (readonly Tier[])[] = [
  ['task', 'worker'],
  ['service'],
  ['database'],
];

/** Thrown by a start step that a stop overtook: the stop wins, nothing more is started. */
export class Stopped extends Error {
  override readonly name = 'Stopped';
  constructor() {
    super('stopped during start-up');
  }
}

export interface Member {
  pid: number;
  tier: Tier;
  name: string;
  /** What asks it to stop: SIGTERM for node processes, SIGINT (fast shutdown) for PostgreSQL. */
  stopSignal: NodeJS.Signals;
}

/** How often a stop names the members it still waits for. */
const WAIT_NOTE_MS = 5_000;

/** How long a member had after SIGKILL to disappear; past that it is reported, not waited for. */
const KILL_GRACE_MS = 5_000;

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

/**
 * Stops `members` tier by tier (STOP_ORDER). `gone(member, signal)` resolves when that process
 * has exited; it is abandoned through `signal` once the member is dealt with.
 */
export async function stopInOrder(
  members: readonly Member[],
  deadlineMs: number,
  gone: (m: Member, signal: AbortSignal) => Promise<void>,
  log: (line: string) => void,
  noteEveryMs = WAIT_NOTE_MS,
): Promise<void> {
  for (const tiers of STOP_ORDER) {
    const group = members.filter((m) => tiers.includes(m.tier));
    if (group.length === 0) continue;
    // Said as it happens, so a stop of many seconds is never silent (README, "Stopping").
    log(`stopping ${names(group)} ...`);
    const left = new Set(group);
    const since = Date.now();
    const note = setInterval(() => {
      const s = Math.round((Date.now() - since) / 1000);
      log(`waiting for ${names([...left])} (${s} s; SIGKILL at ${deadlineMs / 1000} s)`);
    }, noteEveryMs);
    try {
      await Promise.all(
        group.map((m) => stopOne(m, deadlineMs, gone, log).finally(() => left.delete(m))),
      );
    } finally {
      clearInterval(note);
    }
  }
}

const names = (members: readonly Member[]) =>
  members.map((m) => m.name || `pid ${m.pid}`).join(', ');

async function stopOne(
  m: Member,
  deadlineMs: number,
  gone: (m: Member, signal: AbortSignal) => Promise<void>,
  log: (line: string) => void,
): Promise<void> {
  const done = new AbortController();
  // Abandoned (rejected) once this member is dealt with: that is not a failure.
  const exited = gone(m, done.signal).then(
    () => true,
    () => false,
  );
  const timeout = (ms: number) =>
    sleep(ms, false, { signal: done.signal }).catch(() => false as const);
  try {
    send(m.pid, m.stopSignal);
    if (await Promise.race([exited, timeout(deadlineMs)])) return;
    log(`${m.name} (pid ${m.pid}) still running ${deadlineMs} ms after ${m.stopSignal}: SIGKILL`);
    send(-m.pid, 'SIGKILL');
    if (!(await Promise.race([exited, timeout(KILL_GRACE_MS)])))
      log(`${m.name} (pid ${m.pid}) survived SIGKILL for ${KILL_GRACE_MS} ms`);
  } finally {
    done.abort();
  }
}

/** Whether `pid` is a live process (a zombie is not: it only waits for its parent to reap it). */
export function alive(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // Gone, or no /proc at all (not Linux): then ask the kernel.
    return existsSync('/proc/self/stat') ? false : signalable(pid);
  }
  // The state follows the command name, which is in parentheses and may hold anything.
  return !'ZX'.includes(stat.charAt(stat.lastIndexOf(')') + 2));
}

function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Polls until `pid` is gone or `signal` ends the wait. */
export async function pollGone(pid: number, signal: AbortSignal): Promise<void> {
  while (alive(pid)) await sleep(100, undefined, { signal });
}

/** One line of the supervisor-to-watchdog protocol, parsed; null for anything else. */
export function parseWatchdogLine(
  line: string,
): { add: Member } | { gone: number } | { done: true } | null {
  const [verb, pid, tier, stopSignal, name] = line.trim().split(' ');
  if (verb === 'done') return { done: true };
  const n = Number(pid);
  if (!Number.isSafeInteger(n) || n <= 1) return null;
  if (verb === 'gone') return { gone: n };
  if (verb !== 'add' || !TIERS.includes(tier) || !/^SIG[A-Z]+$/.test(stopSignal ?? '')) return null;
  return {
    add: { pid: n, tier: tier as Tier, stopSignal: stopSignal as NodeJS.Signals, name: name ?? '' },
  };
}

export interface SpawnOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here (owner-only, docs/security.md). */
  logFile: string;
  stopSignal?: NodeJS.Signals;
  uid?: number;
  gid?: number;
}

const openLog = (file: string) => openSync(file, 'a', 0o600);

/** Every process one start runs, the stop they all obey, and the watchdog that outlives it. */
export class ProcessRun {
  private readonly stop = new AbortController();
  private readonly members = new Map<number, { member: Member; exited: Promise<void> }>();
  private watchdog: { proc: ChildProcess; exited: Promise<void> } | undefined;
  private stopped: Promise<void> | undefined;
  private spawned = 0;

  constructor(
    private readonly deadlineMs: number,
    private readonly log: (line: string) => void,
    /** How often a stop names the members it still waits for (stopInOrder). */
    private readonly noteEveryMs = WAIT_NOTE_MS,
  ) {}

  /** Aborted when the stop begins: every wait of the start-up takes it. */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  get stopping(): boolean {
    return this.stop.signal.aborted;
  }

  /** Whether anything but the watchdog was ever started. */
  get startedAny(): boolean {
    return this.spawned > 0;
  }

  /** Each start step calls this first: after a stop, nothing more starts. */
  check(): void {
    if (this.stopping) throw new Stopped();
  }

  /** The watchdog (start-watchdog.ts), told of every process from here on. */
  startWatchdog(script: string, logFile: string): void {
    const fd = openLog(logFile);
    try {
      const proc = spawn(process.execPath, [script, String(this.deadlineMs), String(process.pid)], {
        detached: true,
        stdio: ['pipe', fd, fd],
      });
      proc.stdin?.on('error', () => undefined);
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      this.watchdog = { proc, exited };
    } finally {
      closeSync(fd);
    }
  }

  private tell(line: string): void {
    this.watchdog?.proc.stdin?.write(`${line}\n`);
  }

  /** Starts `command` in a process group of its own, logging to its file; refused after a stop. */
  spawn(name: string, tier: Tier, command: string, args: string[], o: SpawnOptions): ChildProcess {
    this.check();
    const fd = openLog(o.logFile);
    let proc: ChildProcess;
    try {
      proc = spawn(command, args, {
        cwd: o.cwd,
        env: o.env,
        detached: true,
        stdio: ['ignore', fd, fd],
        uid: o.uid,
        gid: o.gid,
      });
    } finally {
      closeSync(fd);
    }
    const pid = proc.pid;
    if (pid === undefined) throw new Error(`${name}: could not start ${command}`);
    this.spawned++;
    const member: Member = { pid, tier, name, stopSignal: o.stopSignal ?? 'SIGTERM' };
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    this.members.set(pid, { member, exited });
    this.tell(`add ${pid} ${tier} ${member.stopSignal} ${name}`);
    void exited.then(() => {
      this.members.delete(pid);
      this.tell(`gone ${pid}`);
    });
    return proc;
  }

  /**
   * A one-shot step (initdb, migrations, seed) run to its end, or killed at the deadline or by
   * the stop (as a worker is). Throws Stopped after a stop, an Error naming its log on a failure.
   */
  async task(
    name: string,
    command: string,
    args: string[],
    o: SpawnOptions & { deadlineMs: number },
  ) {
    const proc = this.spawn(name, 'task', command, args, o);
    const exit = new Promise<number | string>((resolve) =>
      proc.once('exit', (code, sig) => resolve(code ?? sig ?? 'unknown')),
    );
    const late = new AbortController();
    const timer = sleep(o.deadlineMs, 'deadline' as const, { signal: late.signal }).catch(
      () => 'cancelled' as const,
    );
    try {
      const first = await Promise.race([exit, timer]);
      if (first === 'deadline') {
        send(-proc.pid!, 'SIGKILL');
        await exit;
        throw new Error(`${name} did not finish within ${o.deadlineMs} ms; see ${o.logFile}`);
      }
      this.check();
      if (first !== 0) throw new Error(`${name} failed (exit ${first}); see ${o.logFile}`);
    } finally {
      late.abort();
    }
  }

  /** Stops everything started, in order (STOP_ORDER), then the watchdog; once, however often asked. */
  stopAll(): Promise<void> {
    this.stop.abort();
    this.stopped ??= this.stopInOrder();
    return this.stopped;
  }

  private async stopInOrder(): Promise<void> {
    const members = [...this.members.values()].map((m) => m.member);
    await stopInOrder(
      members,
      this.deadlineMs,
      (m) => this.members.get(m.pid)?.exited ?? Promise.resolve(),
      this.log,
      this.noteEveryMs,
    );
    const watchdog = this.watchdog;
    if (!watchdog) return;
    watchdog.proc.stdin?.end('done\n');
    const late = new AbortController();
    const inTime = await Promise.race([
      watchdog.exited.then(() => true),
      sleep(KILL_GRACE_MS, false, { signal: late.signal }).catch(() => false),
    ]);
    late.abort();
    if (!inTime) send(-watchdog.proc.pid!, 'SIGKILL');
  }
}
