import { DlockError } from '@dlock/lock-api';

/** `CODE: message` of a failed call, for the page's "unreachable" badges. */
export function describeFailure(err: unknown): string {
  if (err instanceof DlockError) return `${err.code}: ${err.message}`;
  if (err instanceof Error) return `UNAVAILABLE: ${err.message}`;
  return 'UNAVAILABLE: unknown failure';
}
