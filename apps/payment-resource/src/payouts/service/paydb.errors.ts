import { DlockError } from '@dlock/lock-api';
import { sqlState } from '@dlock/persistence';

// SQLSTATEs that mean "the transaction did not happen, try again later".
const TRANSIENT = new Set(['57014', '55P03', '40001', '40P01', '57P01', '57P02', '57P03', '53300']);

/**
 * paydb timeouts, serialisation failures and lost connections become 503
 * UNAVAILABLE. A retry with the same key and token is safe: either nothing
 * committed, or the commit is replayed from the idempotency record.
 */
export function asUnavailable(err: unknown): DlockError | undefined {
  if (err instanceof DlockError) return undefined;
  const code = sqlState(err);
  const transient =
    (code !== undefined && (TRANSIENT.has(code) || code.startsWith('08'))) ||
    (code !== undefined && /^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH)$/.test(code)) ||
    (err instanceof Error &&
      /Connection terminated|timeout exceeded when trying to connect/i.test(err.message));
  return transient
    ? new DlockError('UNAVAILABLE', 'paydb is unavailable; nothing was written', { cause: err })
    : undefined;
}

/** A unique constraint refused the statement (SQLSTATE 23505): it changed nothing. */
export function isUniqueViolation(err: unknown): boolean {
  return sqlState(err) === '23505';
}
