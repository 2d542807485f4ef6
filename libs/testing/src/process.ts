import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUntil } from '@dlock/polling';
import { signalGroup, spawnGroup } from './children';
import { listensOn } from './port-owner';
import { registerAudience, testAppAuthEnv } from './identity';
import {
  lockServerProofs,
  paymentResourceProofs,
  railProxyProofs,
  registerProofSource,
  type ProofSource,
} from './proofs';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** Ports this process already handed out: never twice (an etcd cluster once got one for two members). */
const handedOut = new Set<number>();

/**
 * freePort draws from slices below the kernel's ephemeral range (Linux's
 * ip_local_port_range, 32768-60999 by default), from which every `listen(0)` is
 * served: a port found free there could be given to another test's server in
 * the second before the process it was meant for listens on it, and was (a
 * lock-server that talked to another file's etcd). Each jest worker has a
 * slice of its own; a process outside jest (a bench, the harness) picks one by
 * its pid.
 */
const SLICES_START_PORT = 12_000;
const SLICE_PORTS = 1_000;
const SLICES = 20;

function sliceStartPort(): number {
  const worker = Number(process.env.JEST_WORKER_ID);
  const slice = Number.isInteger(worker) && worker > 0 ? worker % SLICES : process.pid % SLICES;
  return SLICES_START_PORT + slice * SLICE_PORTS;
}

/**
 * A loopback port nothing listens on, outside the range the kernel hands to
 * `listen(0)`, and never one this process handed out before.
 */
export async function freePort(): Promise<number> {
  const start = sliceStartPort();
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = start + Math.floor(Math.random() * SLICE_PORTS);
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port in ${start}..${start + SLICE_PORTS - 1} after 50 attempts`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A node script run to its exit: its exit code and everything it wrote. */
export interface NodeRun {
  code: number | null;
  out: string;
}

/**
 * Runs a built node script (a CLI, or an app expected to refuse to start)
 * with only `env` and PATH, in the repository root, and waits for its exit;
 * SIGKILL after `timeoutMs`, so a test never waits on a hung process.
 */
export function runNode(
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<NodeRun> {
  return new Promise((resolve) => {
    const proc = spawnGroup(process.execPath, [script, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => signalGroup(proc, 'SIGKILL'), timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

export { setTimeout as sleep } from 'node:timers/promises';

/** Polls until `fn` returns a truthy value or the deadline passes (@dlock/polling). */
export function waitFor<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  return waitUntil(what, fn, timeoutMs, 50);
}

export interface RunningApp {
  name: string;
  url: string;
  port: number;
  proc: ChildProcess;
  output(): string;
  pause(): void;
  resume(): void;
  /** SIGTERM and wait for exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/** How http() proves a fenced request to `app` (proofs.ts); none for apps without fenced routes. */
function proofSourceFor(app: string, env: Record<string, string>): ProofSource | undefined {
  switch (app) {
    case 'lock-server':
      return lockServerProofs;
    case 'payment-resource':
      return env.PAYDB_URL === undefined ? undefined : paymentResourceProofs(env.PAYDB_URL);
    case 'rail-proxy':
      return railProxyProofs;
    default:
      return undefined;
  }
}

/** Spawns on a port another process took first: tried again on a new port, this many times. */
const PORT_RACE_ATTEMPTS_MAX = 3;

class PortTakenError extends Error {}

/**
 * Spawns a built app (`dist/apps/<app>/main.js`) as a real process on a free
 * port and waits for /health/live, answered by that process itself (see
 * port-owner.ts). The tests run after `npm run build`.
 * The app trusts the tests' issuer and, when it calls others, holds tokens
 * for its OWNER_ID (or its name) unless `env` says otherwise (identity.ts).
 */
export async function spawnApp(
  app: string,
  env: Record<string, string>,
  opts: {
    port?: number;
    readyPath?: string;
    /** Called with the pid right after the spawn, before the app connects anywhere (partitions). */
    onSpawn?: (pid: number) => void;
  } = {},
): Promise<RunningApp> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(
        app,
        env,
        opts.port ?? (await freePort()),
        opts.readyPath,
        opts.onSpawn,
      );
    } catch (err) {
      if (!(err instanceof PortTakenError) || opts.port !== undefined) throw err;
      if (attempt >= PORT_RACE_ATTEMPTS_MAX) throw err;
    }
  }
}

// Seconds on an idle machine; a 2-core CI box running two jest workers, each
// starting several apps, has been seen to need more than 20 s.
const LISTEN_TIMEOUT_MS = 60_000;

/**
 * Polls the ready path until it answers, and gives up at once when the process
 * exits: a port another process took between freePort() and the app's listen
 * is a PortTakenError (spawnApp tries a new port), anything else an error.
 */
async function waitListening(app: RunningApp, readyUrl: string, closed: Promise<void>) {
  const deadline = Date.now() + LISTEN_TIMEOUT_MS;
  for (;;) {
    if (app.proc.exitCode !== null || app.proc.signalCode !== null) {
      await closed;
      if (app.output().includes('EADDRINUSE'))
        throw new PortTakenError(`${app.name}: port ${app.port} is taken by another process`);
      throw new Error(`${app.name} exited with ${app.proc.exitCode ?? app.proc.signalCode}`);
    }
    const ready = await fetch(readyUrl, { signal: AbortSignal.timeout(5_000) }).then(
      (res) => res.ok,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${LISTEN_TIMEOUT_MS} ms waiting for ${app.name} to listen`);
    await sleep(50);
  }
}

async function spawnOnce(
  app: string,
  env: Record<string, string>,
  port: number,
  readyPath: string | undefined,
  onSpawn: ((pid: number) => void) | undefined,
): Promise<RunningApp> {
  const main = path.join(REPO_ROOT, 'dist', 'apps', app, 'main.js');
  const auth = await testAppAuthEnv(env.OWNER_ID ?? app);
  const proc = spawnGroup(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...auth, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid !== undefined) onSpawn?.(proc.pid);
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  registerAudience(url, app);
  const proofs = proofSourceFor(app, env);
  if (proofs) registerProofSource(url, proofs);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  // 'close' comes after the output is drained: the exit reason is in `out` by then.
  const closed = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const running: RunningApp = {
    name: app,
    url,
    port,
    proc,
    output: () => out,
    pause: () => void signalGroup(proc, 'SIGSTOP'),
    resume: () => void signalGroup(proc, 'SIGCONT'),
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      signalGroup(proc, 'SIGCONT');
      signalGroup(proc, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(proc, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      signalGroup(proc, 'SIGKILL');
      await exited;
    },
  };
  try {
    await waitListening(running, `${url}${readyPath ?? '/health/live'}`, closed);
  } catch (err) {
    await running.kill();
    if (err instanceof PortTakenError) throw err;
    throw new Error(`${String(err)}\n--- ${app} output ---\n${out}`, { cause: err });
  }
  if (proc.pid !== undefined && !(await listensOn(proc.pid, port))) {
    await running.kill();
    throw new PortTakenError(`${app}: port ${port} is taken by another process`);
  }
  return running;
}
