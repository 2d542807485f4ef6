/**
 * How a database failure that reached the global filter unanswered by the
 * service relates to the request (README, Wire conventions):
 * - `not-sent`: no connection could be had (refused, unreachable, credentials
 *   rejected, too many connections, pool acquire timeout, pool not yet
 *   initialised). No statement left this process: any request may be retried.
 * - `lost`: the connection broke or the server shut down while a statement
 *   was in flight. For a read nothing changed; for a write the COMMIT may or
 *   may not have happened, so it is not reported as retry-safe.
 */
export type DatabaseFailure = 'not-sent' | 'lost';

/** SQLSTATEs raised while a connection is being established (class 28, 53300, 57P03, 08001/08004). */
const NOT_SENT_SQLSTATES = new Set(['08001', '08004', '53300', '57P03']);
/** Connection exceptions (class 08) and shutdowns on a live session; 57014 is a statement cut by its timeout. */
const LOST_SQLSTATES = new Set(['57P01', '57P02', '57014']);

const NOT_SENT_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const LOST_NODE_CODES = new Set(['ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/** pg / pg-pool / TypeORM messages that carry no code. */
const NOT_SENT_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated due to connection timeout|is not queryable|Driver not Connected|^Cannot execute operation on ".*" connection because connection is not yet established/i;
const LOST_MESSAGES =
  /Connection terminated unexpectedly|Connection terminated|Query read timeout/i;

function field(error: object, name: string): unknown {
  return (error as Record<string, unknown>)[name];
}

/** The error itself, then what it wraps (TypeORM's driverError, an Error cause), a few levels deep. */
function chain(error: unknown): object[] {
  const out: object[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    out.push(current);
    current = field(current, 'driverError') ?? field(current, 'cause');
  }
  return out;
}

function classifyOne(error: object): DatabaseFailure | undefined {
  const code = field(error, 'code');
  if (typeof code === 'string') {
    if (code.startsWith('28') || NOT_SENT_SQLSTATES.has(code) || NOT_SENT_NODE_CODES.has(code)) {
      return 'not-sent';
    }
    if (code.startsWith('08') || LOST_SQLSTATES.has(code) || LOST_NODE_CODES.has(code)) {
      return 'lost';
    }
  }
  const message = field(error, 'message');
  if (typeof message !== 'string') return undefined;
  if (NOT_SENT_MESSAGES.test(message)) return 'not-sent';
  if (LOST_MESSAGES.test(message)) return 'lost';
  return undefined;
}

/** Whether `error` says the database could not be used, and at which point; undefined otherwise. */
export function databaseFailure(error: unknown): DatabaseFailure | undefined {
  for (const link of chain(error)) {
    const kind = classifyOne(link);
    if (kind !== undefined) return kind;
  }
  return undefined;
}
