/**
 * One service process of the stack bench, started with the ablation preload
 * (ablate.ts) and an IPC channel to switch layers and read its CPU time and
 * statement counts; optionally under callgrind, whose instruction counter
 * the bench zeroes and dumps around each measurement (callgrind_control).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A Nest app under valgrind on a loaded 2-core machine has needed minutes to listen. */
const START_TIMEOUT_MS = 900_000;
const IPC_TIMEOUT_MS = 120_000;

/** What callgrind counted: everything, and the part V8 spent compiling (parser, bytecode, TurboFan, deopts). */
export interface Instructions {
  total: number;
  jit: number;
}

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
  return [
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${path.join(spec.callgrindDir, 'cg.%p')}`,
      `--log-file=${path.join(spec.callgrindDir, 'vg.%p.log')}`,
      process.execPath,
      ...node,
    ],
  ];
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

/**
 * V8's compilers: still optimising long after the warm-up (a burst of
 * TurboFan work lands in one measurement and not the next), they are counted
 * apart so the per-request figure is the execution's.
 */
const JIT_FUNCTIONS =
  /v8::internal::(compiler|maglev|baseline|interpreter|Compiler|Parser|PreParser|Scanner|Zone|Deoptimizer|TranslatedState|AstValueFactory|Scope|DeclarationScope|OptimizedCompilationInfo|Assembler|MacroAssembler|TurboAssembler)\b/;

async function splitDump(file: string): Promise<Instructions> {
  const { stdout } = await run('callgrind_annotate', ['--threshold=100', '--inclusive=no', file], {
    maxBuffer: 256 * 1024 * 1024,
  });
  // callgrind_annotate prints no totals for an empty dump.
  let total = 0;
  let jit = 0;
  for (const line of stdout.split('\n')) {
    const m = /^\s*([\d,]+) \(/.exec(line);
    if (!m) continue;
    const ir = Number(m[1].replace(/,/g, ''));
    if (line.includes('PROGRAM TOTALS')) total = ir;
    else if (JIT_FUNCTIONS.test(line)) jit += ir;
  }
  return { total, jit };
}

/** The newest callgrind dump of `pid`. */
function lastDump(dir: string, pid: number): string {
  const prefix = `cg.${pid}.`;
  const parts = readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .map((f) => Number(f.slice(prefix.length)))
    .filter(Number.isInteger)
    .sort((a, b) => a - b);
  if (parts.length === 0) throw new Error(`no callgrind dump of ${pid} in ${dir}`);
  return path.join(dir, `${prefix}${parts[parts.length - 1]}`);
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
  const dir = spec.callgrindDir;
  const control = (...a: string[]) => run('callgrind_control', [...a, String(pid)]);
  return {
    name: spec.name,
    url,
    pid,
    set: async (off) => void (await ask({ op: 'set', off })),
    stats: async () => {
      const m = await ask({ op: 'stats' });
      return { cpuUs: m.cpuUs as number, statements: m.statements as Record<string, number> };
    },
    instrument: async (on) => void (dir ? await control('-i', on ? 'on' : 'off') : undefined),
    zero: async () => void (dir ? await control('-z') : undefined),
    instructions: async () => {
      if (!dir) return null;
      await control('-d');
      const file = lastDump(dir, pid);
      const counted = await splitDump(file);
      if (process.env.BENCH_STACK_KEEP_DUMPS !== '1') rmSync(file);
      return counted;
    },
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
