import {
  canonicalUuid,
  LOCK_KEY_MAX_LENGTH,
  LOCK_KEY_PATTERN,
  ValidationError,
} from '@dlock/lock-api';

/** Path `key`: 1..128 of [a-zA-Z0-9:._-] (docs/lock-server.md L4), else 400 VALIDATION_FAILED. */
export function parseLockKey(raw: string): string {
  if (!LOCK_KEY_PATTERN.test(raw)) {
    throw new ValidationError([
      { field: 'key', message: `must be 1..${LOCK_KEY_MAX_LENGTH} characters of [a-zA-Z0-9:._-]` },
    ]);
  }
  return raw;
}

/** Path `sessionId`: a UUID, else 400 VALIDATION_FAILED (never reaches the database). */
export function parseSessionId(raw: string): string {
  return canonicalUuid(raw) ?? notAUuid('sessionId');
}

/** Path `requestId` of a two-person revoke: a UUID, else 400 VALIDATION_FAILED. */
export function parseRequestId(raw: string): string {
  return canonicalUuid(raw) ?? notAUuid('requestId');
}

function notAUuid(field: string): never {
  throw new ValidationError([{ field, message: 'must be a UUID' }]);
}
