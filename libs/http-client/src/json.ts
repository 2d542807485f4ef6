import { isSafeNumber, parse } from 'lossless-json';
import { isErrorCode, type ErrorEnvelope } from '@dlock/lock-api';

const LONG_DIGIT_RUN = /\d{16}/;
const INTEGER_LITERAL = /^-?\d+$/;

/**
 * JSON.parse that never loses int64 digits: an integer literal outside the
 * safe range becomes a bigint; a non-integer stays a number. Throws the
 * parser's SyntaxError on malformed text.
 */
export function parseInt64Json(text: string): unknown {
  return parse(text, null, (value: string) => {
    if (INTEGER_LITERAL.test(value) && !isSafeNumber(value)) return BigInt(value);
    return Number(value);
  });
}

/**
 * A peer's response body: the values parseInt64Json reads, several times
 * faster when no run of 16 digits means no integer literal can pass
 * 2^53 - 1. Unlike a request body it is not input to validate, so a
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
  return parseInt64Json(text);
}

/** JSON.stringify replacer: a bigint is written as its decimal string (int64 on the wire). */
export function int64Replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString(10) : value;
}

/** Request bodies of every outbound call: bigints as decimal strings, never a thrown TypeError. */
export function stringifyInt64Json(value: unknown): string {
  return JSON.stringify(value, int64Replacer);
}

/** A contract error envelope (docs/contract.md), checked field by field before it is trusted. */
export function isErrorEnvelope(value: unknown): value is ErrorEnvelope {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    isErrorCode(v.code) &&
    typeof v.message === 'string' &&
    typeof v.retrySafe === 'boolean' &&
    (v.retryAfterMillis === undefined ||
      (Number.isSafeInteger(v.retryAfterMillis) && (v.retryAfterMillis as number) >= 0)) &&
    (v.details === undefined || (typeof v.details === 'object' && v.details !== null))
  );
}
