import { randomUUID } from 'node:crypto';
import { renameSync, statSync, writeFileSync } from 'node:fs';

// What the token files and the development issuer share, without jose: the published
// @dlock/identity entry (fileTokenProvider) must load no ESM-only package, or Jest on Node.js
// before 24.9 cannot load it (docs/extending.md, "Which projects").

export const DEV_TOKEN_TTL_SEC = 600;

/** Readers (other processes) see the old file or the new one, never half of one. */
export function writeAtomically(path: string, text: string, mode = 0o600): void {
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
}

/**
 * The mode a rewritten public file keeps: the one it has (`npm start` makes everything under
 * .dlock/ 0600, and a key rotation must not loosen that), else `fresh`.
 */
export function keptMode(path: string, fresh = 0o644): number {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return fresh;
  }
}
