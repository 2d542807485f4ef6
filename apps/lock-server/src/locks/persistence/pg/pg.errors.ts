import { QueryFailedError } from 'typeorm';

/**
 * SQLSTATEs that mean "this database cannot decide right now" rather than
 * "the statement was wrong": connection exceptions (08xxx), shutdown and
 * failover (57P01-57P03), a read-only primary or standby (25006), too many
 * connections (53300), a statement cut by its timeout (57014).
 */
const UNAVAILABLE_SQLSTATES = new Set(['25006', '53300', '57014', '57P01', '57P02', '57P03']);

const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection timeout|Client has encountered a connection error|Connection ended|not queryable/i;

/** True when the error says the database is unreachable, read-only or failing over. */
export function isUnavailable(error: unknown): boolean {
  const inner: unknown = error instanceof QueryFailedError ? error.driverError : error;
  if (typeof inner !== 'object' || inner === null) return false;
  const code = (inner as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code)) return true;
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
  }
  const message = (inner as { message?: unknown }).message;
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message);
}

/**
 * A new connection that did not complete within LOCKDB_CONNECT_TIMEOUT_MS (the
 * pool's wait for one, or the client's own connect timer). Both are timers on
 * this process's event loop: they also fire when the loop was too busy to read
 * an answer that had arrived (PgDatabase tells the two apart).
 */
export function isConnectTimeout(error: unknown): boolean {
  const inner: unknown = error instanceof QueryFailedError ? error.driverError : error;
  const message = (inner as { message?: unknown } | null)?.message;
  return (
    typeof message === 'string' &&
    /timeout exceeded when trying to connect|Connection terminated due to connection timeout/i.test(
      message,
    )
  );
}
