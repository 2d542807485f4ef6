/**
 * One service process of the stack bench, started with the ablation preload
 * (ablate.ts) and an IPC channel to switch layers and read its CPU time and
 * statement counts; optionally under callgrind, whose instruction counter
 * the bench zeroes and dumps around each measurement (callgrind_control).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { callgrindCounter, underCallgrind, type Instructions } from '../callgrind';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A Nest app under valgrind on a loaded 2-core machine has needed minutes to listen. */
const START_TIMEOUT_MS = 900_000;
const IPC_TIMEOUT_MS = 120_000;

export type { Instructions } from '../callgrind';

export interface ServiceStats {
  cpuUs: number;
  statements: Record<string, number>;
}

export interface Service {
  name: string;
  url: string;
  pid: number;
  /** Layers off from now on (ablate.ts). */
  set(off: readonly string[]): Promise<void>;
  stats(): Promise<ServiceStats>;
  /** Under callgrind: counting on or off (start-up and warm-ups run uninstrumented, faster). */
  instrument(on: boolean): Promise<void>;
  zero(): Promise<void>;
  /** Under callgrind: instructions since the last `zero()`; else null. */
  instructions(): Promise<Instructions | null>;
  stop(): Promise<void>;
}

export interface ServiceSpec {
  name: string;
  /** The entry point, e.g. dist/apps/rail-stub/main.js. */
  main: string;
  env: Record<string, string>;
  /** Directory for callgrind's dumps; the process runs under callgrind when set. */
  callgrindDir?: string;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

function command(spec: ServiceSpec): [string, string[]] {
  const preload = path.join(__dirname, 'ablate.js');
  const flags = (process.env.BENCH_STACK_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const node = [...flags, '-r', preload, spec.main];
  if (!spec.callgrindDir) return [process.execPath, node];
  return underCallgrind(spec.callgrindDir, node);
}

async function waitLive(url: string, proc: ChildProcess, name: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      if ((await fetch(`${url}/health/live`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || proc.exitCode !== null || proc.signalCode !== null) {
      proc.kill('SIGKILL');
      throw new Error(`${name} did not start`);
    }
    await sleep(250);
  }
}

/** Request/answer over the IPC channel, one at a time per op. */
function ipc(proc: ChildProcess) {
  const waiting = new Map<string, (m: any) => void>();
  proc.on('message', (m: { op: string }) => {
    const resolve = waiting.get(m.op);
    waiting.delete(m.op);
    resolve?.(m);
  });
  return (message: { op: string; off?: readonly string[] }) =>
    new Promise<any>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no IPC answer to ${message.op}`)),
        IPC_TIMEOUT_MS,
      );
      waiting.set(message.op, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      proc.send(message);
    });
}

export async function startService(spec: ServiceSpec): Promise<Service> {
  const port = await freePort();
  const [cmd, args] = command(spec);
  const proc = spawn(cmd, args, {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...spec.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitLive(url, proc, spec.name);
  const ask = ipc(proc);
  const pid = proc.pid ?? 0;
  const counter = spec.callgrindDir ? callgrindCounter(spec.callgrindDir, pid) : null;
  return {
    name: spec.name,
    url,
    pid,
    set: async (off) => void (await ask({ op: 'set', off })),
    stats: async () => {
      const m = await ask({ op: 'stats' });
      return { cpuUs: m.cpuUs as number, statements: m.statements as Record<string, number> };
    },
    instrument: async (on) => void (await counter?.instrument(on)),
    zero: async () => void (await counter?.zero()),
    instructions: async () => (counter ? counter.instructions() : null),
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}
