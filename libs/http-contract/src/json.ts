import { ValidationError } from '@dlock/lock-api';
import { parseInt64Json } from '@dlock/http-client';

// The outbound side (peer answers, bigint-safe request bodies) lives in the one HTTP client lib.
export { int64Replacer, parsePeerJson } from '@dlock/http-client';

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
