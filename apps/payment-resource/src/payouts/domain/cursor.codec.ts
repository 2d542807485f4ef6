import { UUID_PATTERN, ValidationError } from '@dlock/lock-api';

/** Position after the last item of a P1 page: payouts are listed by (createdAt, payoutId). */
export interface Cursor {
  createdAt: Date;
  payoutId: string;
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const CURSOR_MAX_LENGTH = 256;

/** Opaque to clients: base64url of a small JSON pair. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.createdAt.toISOString(), c.payoutId])).toString('base64url');
}

export function decodeCursor(text: string): Cursor {
  const bad = () =>
    new ValidationError([{ field: 'cursor', message: 'is not a cursor this service issued' }]);
  if (text.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== 'string' ||
    typeof value[1] !== 'string' ||
    !ISO_MS.test(value[0]) ||
    !UUID_PATTERN.test(value[1])
  ) {
    throw bad();
  }
  const createdAt = new Date(value[0]);
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== value[0]) throw bad();
  return { createdAt, payoutId: value[1] };
}
