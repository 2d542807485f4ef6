import { LOCK_KEY_MAX_LENGTH, LOCK_KEY_PATTERN, ValidationError } from '@dlock/lock-api';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  if (!UUID.test(raw)) {
    throw new ValidationError([{ field: 'sessionId', message: 'must be a UUID' }]);
  }
  return raw.toLowerCase();
}

/** Path `requestId` of a two-person revoke: a UUID, else 400 VALIDATION_FAILED. */
export function parseRequestId(raw: string): string {
  if (!UUID.test(raw)) {
    throw new ValidationError([{ field: 'requestId', message: 'must be a UUID' }]);
  }
  return raw.toLowerCase();
}
