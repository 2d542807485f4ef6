import { isSafeNumber, parse } from 'lossless-json';
import { ValidationError } from '@dlock/lock-api';

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

/** JSON.stringify replacer: a bigint is written as its decimal string (int64 on the wire). */
export function int64Replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString(10) : value;
}
