import { InvalidTokenError } from './errors';

/**
 * A fencing token: a positive int64 that only ever increases for a key.
 * Always a `bigint` in code and a decimal string on the wire; a JS number
 * would silently lose digits above 2^53.
 */
export type FencingToken = bigint & { readonly __brand?: 'FencingToken' };

export const FENCING_TOKEN_MAX = 2n ** 63n - 1n;

const CANONICAL = /^[1-9][0-9]{0,18}$/;

/**
 * The one strict parser for tokens arriving from outside (headers, bodies,
 * database text). Canonical decimal only: no sign, no leading zero, no
 * whitespace, no exponent, no hex, nothing above 2^63-1. A bigint is accepted
 * when in range; a JS number only when it is a safe integer (so no digit was
 * already lost). Everything else is INVALID_TOKEN — never coerced to 0.
 */
export function parseFencingToken(input: unknown, field = 'X-Fencing-Token'): FencingToken {
  if (typeof input === 'bigint') {
    if (input < 1n || input > FENCING_TOKEN_MAX) throw new InvalidTokenError(field, 'out of range');
    return input;
  }
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 1)
      throw new InvalidTokenError(field, 'not a positive integer');
    return BigInt(input);
  }
  if (typeof input !== 'string') {
    throw new InvalidTokenError(field, input === undefined ? 'missing' : 'not a decimal string');
  }
  if (!CANONICAL.test(input))
    throw new InvalidTokenError(field, 'not a canonical positive decimal');
  const value = BigInt(input);
  if (value > FENCING_TOKEN_MAX) throw new InvalidTokenError(field, 'above the int64 maximum');
  return value;
}

/** Serialises a token for the wire (headers and JSON bodies alike). */
export function formatFencingToken(token: bigint): string {
  return token.toString(10);
}
