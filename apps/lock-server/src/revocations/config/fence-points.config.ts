import { LOCK_KEY_PATTERN } from '@dlock/lock-api';

/**
 * One fence point a revoke reaches before it answers (docs/security.md,
 * "Revocation notices"; docs/lock-server.md, FENCE_POINTS): every key that
 * starts with `prefix` is guarded there, and the revoke of one presents its
 * notice at `url` (`POST`, the generic fence point contract).
 */
export interface FencePointConfig {
  /** How the revoke's answer (`guards`) and its logs name it. */
  name: string;
  prefix: string;
  /** The full URL of its `POST /v1/revocation-notices` (or the team's own path). */
  url: string;
  /** The token audience the lock-server presents there, from AUTH_TOKEN_DIR; none when absent. */
  audience?: string;
}

/** A revoke waits for every fence point at once: this many is already a design smell. */
export const FENCE_POINTS_MAX = 16;
const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;
const FIELDS = new Set(['name', 'prefix', 'url', 'audience']);

function pointProblems(p: Record<string, unknown>, at: string): string[] {
  const problems: string[] = [];
  for (const field of Object.keys(p))
    if (!FIELDS.has(field)) problems.push(`${at}.${field}: is not a fence point field`);
  if (typeof p.name !== 'string' || !NAME.test(p.name))
    problems.push(`${at}.name: must be 1..64 of a-z, 0-9 and -`);
  if (typeof p.prefix !== 'string' || !LOCK_KEY_PATTERN.test(p.prefix))
    problems.push(`${at}.prefix: must be the start of a lock key ([a-zA-Z0-9:._-]{1,128})`);
  if (typeof p.url !== 'string' || !isHttpUrl(p.url))
    problems.push(`${at}.url: must be an http:// URL`);
  if (p.audience !== undefined && (typeof p.audience !== 'string' || !NAME.test(p.audience)))
    problems.push(`${at}.audience: must be 1..64 of a-z, 0-9 and -`);
  return problems;
}

function isHttpUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * FENCE_POINTS: a JSON array of `{ name, prefix, url, audience? }`, read once
 * at start. Problems are named by their place (`FENCE_POINTS[1].url`); an
 * unset variable is no fence point, a revoke then raises nothing itself.
 */
export function parseFencePoints(raw: string | undefined): {
  points: FencePointConfig[];
  problems: string[];
} {
  if (raw === undefined || raw.trim() === '') return { points: [], problems: [] };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { points: [], problems: ['FENCE_POINTS: is not JSON (an array of fence points)'] };
  }
  if (!Array.isArray(value) || value.length > FENCE_POINTS_MAX) {
    const problem = `FENCE_POINTS: must be an array of at most ${FENCE_POINTS_MAX} fence points`;
    return { points: [], problems: [problem] };
  }
  const problems = value.flatMap((p: unknown, i) =>
    typeof p === 'object' && p !== null && !Array.isArray(p)
      ? pointProblems(p as Record<string, unknown>, `FENCE_POINTS[${i}]`)
      : [`FENCE_POINTS[${i}]: must be an object { name, prefix, url, audience? }`],
  );
  const names = value.map((p: { name?: unknown }) => p?.name);
  if (new Set(names).size !== names.length) problems.push('FENCE_POINTS: names must be unique');
  if (problems.length > 0) return { points: [], problems };
  return { points: (value as FencePointConfig[]).map((p) => Object.freeze({ ...p })), problems };
}
