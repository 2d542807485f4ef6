/**
 * Shared pieces of the etcd benchmarks (etcd-bench.ts, failover-bench.ts):
 * spawning the built lock-server on an etcd cluster, a keep-alive HTTP
 * client, percentiles, and the machine line of the reports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { cachedBearer, testAuthEnv } from '../../libs/testing/src/identity';
import { freePort } from '../../libs/testing/src/process';
import { setTimeout as sleep } from 'node:timers/promises';
import { diesWithBench } from '../children';

export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const DATA_ROOT = path.join(ROOT, '.tmp');

export { sleep };

export { freePort };

export interface LockServerProcess {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** `dist/apps/lock-server/main.js` on LOCK_BACKEND=etcd, ready when /health/ready says so. */
export function startEtcdLockServer(
  endpoints: string[],
  env: Record<string, string> = {},
): Promise<LockServerProcess> {
  return startLockServerProcess({
    LOCK_BACKEND: 'etcd',
    ETCD_ENDPOINTS: endpoints.join(','),
    ...env,
  });
}

/**
 * BENCH_CPU_PROF_DIR=<dir>: every lock-server a bench starts writes a V8 CPU profile there
 * when it stops (cpu-profile-preload.ts; summarise with profile-by-package.js).
 */
export function cpuProfileEnv(): Record<string, string> {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  if (!dir) return {};
  return {
    BENCH_CPU_PROF_DIR: path.resolve(dir),
    NODE_OPTIONS: `--require ${path.join(__dirname, 'cpu-profile-preload.js')}`,
  };
}

/**
 * The built lock-server with the given backend settings (or another built
 * entry point answering the same routes: `main`), ready when /health/ready says so.
 */
export async function startLockServerProcess(
  env: Record<string, string>,
  main = path.join(ROOT, 'dist', 'apps', 'lock-server', 'main.js'),
): Promise<LockServerProcess> {
  const port = await freePort();
  const proc = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      LOCK_WAITERS_MAX: '1000',
      LOCK_WAITERS_PER_OWNER_MAX: '1000',
      LOCK_WAITERS_TOTAL_MAX: '1000',
      LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '100000',
      ...(await testAuthEnv()),
      ...cpuProfileEnv(),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  diesWithBench(proc, true);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/health/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || proc.exitCode !== null)
      throw new Error('lock-server did not start');
    await sleep(100);
  }
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

export const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/**
 * One request with the token of the owner it acts as (its X-Owner-Id, else
 * the body's ownerId): authentication is on in the benches too (docs/security.md).
 */
export async function call(
  base: string,
  method: string,
  pathname: string,
  headers: Record<string, string>,
  body?: unknown,
  timeoutMs = 5_000,
  via: http.Agent = agent,
): Promise<{ status: number; body: any }> {
  const owner = headers['x-owner-id'] ?? (body as { ownerId?: string } | undefined)?.ownerId;
  const authorization = await cachedBearer(owner ?? 'operator', 'lock-server');
  return send(base, method, pathname, { ...headers, authorization }, body, timeoutMs, via);
}

function send(
  base: string,
  method: string,
  pathname: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  via: http.Agent,
): Promise<{ status: number; body: any }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request(
      `${base}${pathname}`,
      {
        method,
        agent: via,
        timeout: timeoutMs,
        headers: payload
          ? {
              ...headers,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            }
          : headers,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    // A transport failure or a hung call is an answer too (status 0), never a crash.
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (err) =>
      resolve({ status: 0, body: { code: 'TRANSPORT', message: err.message } }),
    );
    if (payload) req.write(payload);
    req.end();
  });
}

export function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export function machineLine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  return `${os.cpus().length} CPUs (nproc) ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}, ${os.platform()} ${os.release()}`;
}
