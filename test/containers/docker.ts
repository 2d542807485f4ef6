import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@dlock/testing';

const run = promisify(execFile);
/** Every docker call has a deadline: a hung engine fails the test, it does not hold it. */
const DOCKER_CALL_TIMEOUT_MS = 120_000;

/** The image every dlock service runs (`npm run images:local` builds it here). */
export const DLOCK_IMAGE = 'dlock:local';

/** `docker ARGS`, its stdout; a failure carries the command's stderr. */
export async function docker(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return (await run('docker', args, { env, timeout: DOCKER_CALL_TIMEOUT_MS })).stdout.trim();
}

/** A container's output, stdout and stderr together (the apps log to both). */
export async function containerLogs(id: string, tail = 30): Promise<string> {
  const out = await run('docker', ['logs', '--tail', String(tail), id], {
    timeout: DOCKER_CALL_TIMEOUT_MS,
  }).catch((err: { stdout?: string; stderr?: string }) => err);
  return `${out.stdout ?? ''}${out.stderr ?? ''}`;
}

/** `docker-compose ARGS` (Debian's 1.29, or the compose plugin's `docker compose`). */
export async function compose(args: string[], env: NodeJS.ProcessEnv) {
  const opts = { env, cwd: REPO_ROOT, timeout: 600_000, maxBuffer: 32 << 20 };
  return (await run('docker-compose', args, opts)).stdout.trim();
}

/**
 * The base images of this machine: the environment's DLOCK_*_IMAGE, else what
 * deploy/docker/local-images.env names (the images scripts/images-local.sh builds).
 */
export function baseImages(): Record<string, string> {
  const file = readFileSync(path.join(REPO_ROOT, 'deploy/docker/local-images.env'), 'utf8');
  const named = Object.fromEntries(
    file
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => line.split('=', 2) as [string, string]),
  );
  return Object.fromEntries(Object.keys(named).map((k) => [k, process.env[k] ?? named[k]]));
}

/**
 * Asked for, the container tests run or fail loudly: an engine must answer and the
 * images must be there (never pulled: this machine may have no registry).
 */
export async function requireEngineAndImages(images: string[]): Promise<void> {
  try {
    await docker(['info', '--format', '{{.ServerVersion}}']);
  } catch (err) {
    throw new Error(
      `the container tests need a Docker engine (scripts/container-engine.sh start): ${String(err)}`,
      { cause: err },
    );
  }
  for (const image of images) {
    await docker(['image', 'inspect', '--format', '{{.Id}}', image]).catch(() => {
      throw new Error(`image ${image} is missing: build it with npm run images:local`);
    });
  }
}
