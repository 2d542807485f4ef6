import { createHash } from 'node:crypto';

function canonical(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString(10);
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** A stable fingerprint of a request: key order and int64 representation do not matter. */
export function requestHash(payoutId: string, body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify({ payoutId, body: canonical(body) }))
    .digest('hex');
}
