import type { ChildProcess } from 'node:child_process';

/**
 * Every process a bench started and has not stopped: killed with the bench,
 * however it ends (its last line, an error, SIGINT or SIGTERM to the bench's
 * pid alone): nothing outlives a run (CONTRIBUTING.md, "Before a change lands").
 */
const started = new Set<ChildProcess>();
/** Those spawned `detached: true`: each leads its own process group. */
const leaders = new WeakSet<ChildProcess>();

function killStarted(): void {
  for (const proc of started) {
    if (proc.pid === undefined || proc.exitCode !== null) continue;
    try {
      // A detached child leads its own group, which also holds what it started.
      process.kill(leaders.has(proc) ? -proc.pid : proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

process.once('exit', killStarted);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killStarted();
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

/** Registers `proc` (spawned with `detached: true` when `groupLeader`) to die with the bench. */
export function diesWithBench(proc: ChildProcess, groupLeader: boolean): ChildProcess {
  started.add(proc);
  if (groupLeader) leaders.add(proc);
  proc.once('exit', () => started.delete(proc));
  return proc;
}
