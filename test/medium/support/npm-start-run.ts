import { type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import {
  FaultPlan,
  type FaultSettings,
} from '../../../apps/rail-stub/src/rail/domain/fault-plan.rules';
import { REPO_ROOT, portListening, spawnGroup, waitFor } from '@dlock/testing';

/**
 * `npm start` driven by a test as a user runs it: in a process group of its own, every
 * process of the run marked in its environment so the test finds (and, on failure, kills)
 * them without asking the supervisor (README, "Stopping").
 */

const RUN_VAR = 'DLOCK_TEST_START_RUN';

/** The rail-stub as scripts/start.mjs configures it (docs/console.md, "Watching a holder get fenced"). */
export const NPM_START_STUB_FAULTS: FaultSettings = {
  latencyMs: 20,
  failureRate: 0.005,
  failureMode: 'mixed',
  failureAcceptRate: 0.5,
  holdMs: 10_000,
  declineRate: 0.02,
  duplicateAckRate: 0,
  slowRate: 0.05,
  slowLatencyMs: 15_000,
};

/** The first stub seed whose first `calls` calls, as `npm start` configures the stub, pass `ok`. */
export function stubSeedWhere(
  calls: number,
  ok: (plan: ReturnType<FaultPlan['next']>[]) => boolean,
): number {
  for (let seed = 1; seed < 1_000_000; seed++) {
    const plan = new FaultPlan(NPM_START_STUB_FAULTS, seed);
    if (ok(Array.from({ length: calls }, () => plan.next()))) return seed;
  }
  throw new Error(`no stub seed in a million makes its first ${calls} calls as asked`);
}

/** Where the kernel hands out ports for port 0 and outgoing connections (Linux default). */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/);
    return Number(low) || 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A block of `size` free consecutive ports, below the ephemeral range: there another test's
 * port-0 listener or outgoing connection could take one between this check and the listen.
 */
export async function freePortBlock(size: number): Promise<number> {
  const top = Math.min(ephemeralLow(), 32_768) - size;
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 10_000 + Math.floor(Math.random() * (top - 10_000));
    const taken = await Promise.all(
      Array.from({ length: size }, (_, i) => portListening(base + i)),
    );
    if (!taken.some(Boolean)) return base;
  }
  throw new Error(`no ${size} free ports in a row`);
}

export interface StartRun {
  id: string;
  npm: ChildProcess;
  output(): string;
  /** npm's end, once the supervisor, which writes to the same pipes, is done too. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` (the build already done: prestart skipped) with `env` as its whole environment. */
export function npmStart(env: Record<string, string>): StartRun {
  const id = randomUUID();
  const npm = spawnGroup('npm', ['start', '--ignore-scripts', '--silent'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      ...env,
      [RUN_VAR]: id,
    },
  });
  let out = '';
  npm.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('close', (code, signal) => resolve({ code, signal })),
  );
  return { id, npm, output: () => out, exited };
}

/** Waits for `line` in the run's output; fails at once if the run ends first. */
export async function printed(run: StartRun, line: RegExp, timeoutMs: number): Promise<void> {
  let gone = false;
  void run.exited.then(() => (gone = true));
  await waitFor(
    async () => {
      if (line.test(run.output())) return true;
      if (gone) throw new Error(`npm start exited before printing ${line}:\n${run.output()}`);
      return false;
    },
    timeoutMs,
    `npm start to print ${line}`,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n--- output:\n${run.output()}`);
  });
}

/** Every live process whose environment carries this run's marker (the postmaster's too). */
export function processesOf(run: StartRun): { pid: number; cmd: string }[] {
  const found: { pid: number; cmd: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (!environ.split('\0').includes(`${RUN_VAR}=${run.id}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.charAt(stat.lastIndexOf(')') + 2) === 'Z') continue;
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      found.push({ pid: Number(entry), cmd: cmd.trim() });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Ctrl-C to the run's process group, and the run's end. */
export async function interrupt(run: StartRun): Promise<void> {
  if (run.npm.exitCode === null && run.npm.signalCode === null)
    process.kill(-run.npm.pid!, 'SIGINT');
  await run.exited;
}

/** Whatever a failed test left of the run: each leftover's group, then the process itself. */
export function killLeftovers(run: StartRun): void {
  for (const { pid } of processesOf(run)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* not a group leader, or gone */
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
