import { ValidationError } from '@dlock/lock-api';
import { parseInt64Json } from '@dlock/http-client';

// The outbound side (peer answers, bigint-safe request bodies) lives in the one HTTP client lib.
export { int64Replacer, parsePeerJson } from '@dlock/http-client';

/** Deepest nesting a request body may have: every DTO here is two levels deep at most. */
export const BODY_DEPTH_MAX = 64;

/**
 * Deepest `[`/`{` nesting of a JSON text, counted without parsing (strings
 * skipped), so a deep body is refused before any recursive code walks it:
 * class-transformer overflowed the stack on 2,000 levels under the size limit.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/**
 * A request body: JSON (parseJsonPreservingInt64) that is an object and at
 * most BODY_DEPTH_MAX deep; anything else is 400 VALIDATION_FAILED. Every
 * route takes an object DTO, and the validation pipe cannot handle a bare
 * bigint (an integer literal beyond 2^53 - 1 as the whole body).
 */
export function parseRequestBody(text: string): Record<string, unknown> {
  if (jsonNestingDepth(text) > BODY_DEPTH_MAX) {
    throw new ValidationError(
      [{ field: 'body', message: `must be nested at most ${BODY_DEPTH_MAX} levels deep` }],
      'request body nested too deep',
    );
  }
  const value = parseJsonPreservingInt64(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(
      [{ field: 'body', message: 'must be a JSON object' }],
      'request body must be a JSON object',
    );
  }
  return value as Record<string, unknown>;
}

/**
 * JSON.parse that never loses int64 digits: an integer literal outside the
 * safe range becomes a bigint (validators then accept it only where an int64
 * is allowed, i.e. tokens); a non-integer stays a number. Malformed text is
 * the contract's VALIDATION_FAILED.
 */
export function parseJsonPreservingInt64(text: string): unknown {
  try {
    return parseInt64Json(text);
  } catch (err) {
    throw new ValidationError(
      [{ field: 'body', message: `malformed JSON: ${(err as Error).message}` }],
      'malformed JSON body',
    );
  }
}
