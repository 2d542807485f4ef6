import { isSafeNumber, parse } from 'lossless-json';
import { ValidationError } from '@dlock/lock-api';

const LONG_DIGIT_RUN = /\d{16}/;

/**
 * JSON.parse that never loses int64 digits: an integer literal outside the
 * safe range becomes a bigint (validators then accept it only where an int64
 * is allowed, i.e. tokens); a non-integer stays a number.
 */
export function parseJsonPreservingInt64(text: string): unknown {
  try {
    return parse(text, null, (value: string) => {
      if (/^-?\d+$/.test(value) && !isSafeNumber(value)) return BigInt(value);
      return Number(value);
    });
  } catch (err) {
    throw new ValidationError(
      [{ field: 'body', message: `malformed JSON: ${(err as Error).message}` }],
      'malformed JSON body',
    );
  }
}

/**
 * A peer service's response body: the values parseJsonPreservingInt64 reads,
 * several times faster when no run of 16 digits means no integer literal can
 * pass 2^53 - 1. Unlike a request body it is not input to validate, so a
 * duplicate key is not refused here; anything JSON.parse rejects takes the
 * lossless path and fails with its message.
 */
export function parsePeerJson(text: string): unknown {
  if (!LONG_DIGIT_RUN.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // the lossless parser names the fault
    }
  }
  return parseJsonPreservingInt64(text);
}

/** JSON.stringify replacer: a bigint is written as its decimal string (int64 on the wire). */
export function int64Replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString(10) : value;
}
