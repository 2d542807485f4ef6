import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Every process a test starts, each the leader of its own process group, so
 * one signal to the group also reaches what it started (npm's node, a shell's
 * child). Two nets catch a process its test did not stop: the test
 * environment kills every group left when a test file ends, also on failure
 * (test/environment.js), and the global teardown kills any whose pid file a
 * crashed worker left behind (test/global-teardown.mjs, DLOCK_TEST_PIDS_DIR).
 */
const SPAWNED_KEY = '__dlockSpawned';

/** The groups still running, on the test file's global where test/environment.js finds them. */
function spawnedSet(): Set<number> {
  const holder = globalThis as unknown as Record<string, Set<number> | undefined>;
  holder[SPAWNED_KEY] ??= new Set<number>();
  return holder[SPAWNED_KEY];
}

function pidFile(pid: number): string | undefined {
  const dir = process.env.DLOCK_TEST_PIDS_DIR;
  return dir === undefined ? undefined : path.join(dir, String(pid));
}

/**
 * spawn(), in a new process group the test run kills if the test does not
 * (typed as spawn, so piped streams stay non-null).
 */
export const spawnGroup = ((command: string, args: readonly string[], options?: SpawnOptions) => {
  const proc = spawn(command, args, { ...options, detached: true });
  const pid = proc.pid;
  if (pid === undefined) return proc; // spawn failed: 'error' follows, nothing runs
  spawnedSet().add(pid);
  const file = pidFile(pid);
  if (file !== undefined) writeFileSync(file, '');
  proc.once('exit', () => {
    spawnedSet().delete(pid);
    if (file !== undefined) rmSync(file, { force: true });
  });
  return proc;
}) as typeof spawn;

/** Sends `signal` to the process's whole group; false when the group is gone. */
export function signalGroup(proc: ChildProcess, signal: NodeJS.Signals): boolean {
  if (proc.pid === undefined) return false;
  try {
    process.kill(-proc.pid, signal);
    return true;
  } catch {
    return false;
  }
}
