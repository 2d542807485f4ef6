import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DevIssuer } from './dev-issuer';
import { DEV_TOKEN_TTL_SEC, writeAtomically } from './files';
import type { TokenProvider } from './token-provider';

/** How long a token read from a file is reused before the file is read again. */
export const TOKEN_FILE_RELOAD_MS = 5_000;
const AUDIENCE_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

/**
 * The token a service sends to `audience`: the file `<dir>/<audience>`, as a
 * kubelet projects a service-account token (one file per audience, rewritten
 * before expiry) and as the development issuer writes them. Re-read every
 * TOKEN_FILE_RELOAD_MS, so a rotated token is used without a restart.
 */
export function fileTokenProvider(
  dir: string,
  audience: string,
  opts: { reloadMs?: number; now?: () => number } = {},
): TokenProvider {
  if (!AUDIENCE_PATTERN.test(audience)) throw new RangeError(`bad audience name: ${audience}`);
  const path = join(dir, audience);
  const reloadMs = opts.reloadMs ?? TOKEN_FILE_RELOAD_MS;
  const now = opts.now ?? Date.now;
  let cached = '';
  let readAt = -Infinity;
  return () => {
    if (now() - readAt >= reloadMs) {
      const text = readFileSync(path, 'utf8').trim();
      if (text === '') throw new Error(`token file ${path} is empty`);
      cached = text;
      readAt = now();
    }
    return cached;
  };
}

/**
 * Writes `subject`'s token for each audience into `dir` and rewrites them at
 * half their lifetime (the development stand-in for the kubelet's rotation).
 */
export class DevTokenFiles {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly issuer: DevIssuer,
    readonly subject: string,
    private readonly audiences: readonly string[],
    readonly dir: string,
    private readonly ttlSec = DEV_TOKEN_TTL_SEC,
  ) {
    for (const a of audiences)
      if (!AUDIENCE_PATTERN.test(a)) throw new RangeError(`bad audience name: ${a}`);
  }

  async write(): Promise<void> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const audience of this.audiences) {
      const token = await this.issuer.mint(this.subject, audience, { ttlSec: this.ttlSec });
      writeAtomically(join(this.dir, audience), token);
    }
  }

  /** Writes now, then every half lifetime until stop(); the timer never keeps the process alive. */
  async start(onError: (err: unknown) => void): Promise<void> {
    await this.write();
    this.timer = setInterval(() => void this.write().catch(onError), (this.ttlSec * 1000) / 2);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
