import { SessionLostError } from '@dlock/lock-api';
import { type Deadline, type EtcdGateway, get, firstAt } from './etcd-gateway';

/**
 * The error for a session whose live key is gone: SESSION_EXPIRED while its
 * tombstone says it existed (within LOCK_SESSION_RETENTION_MS), otherwise
 * SESSION_UNKNOWN (docs/contract.md keeps the two apart so an operator can tell a
 * wrong id from a slow client). Messages match the pg backend (FR-09).
 */
export async function sessionGoneError(
  gw: EtcdGateway,
  sessionId: string,
  deadline: Deadline,
): Promise<SessionLostError> {
  const res = await gw.read([get(gw.keys.sessionMeta(sessionId))], deadline);
  return sessionGoneFrom(firstAt(res, 0) !== undefined);
}

export function sessionGoneFrom(existed: boolean): SessionLostError {
  return existed
    ? new SessionLostError('SESSION_EXPIRED', 'session expired; its locks were released')
    : new SessionLostError('SESSION_UNKNOWN', 'no such session');
}
