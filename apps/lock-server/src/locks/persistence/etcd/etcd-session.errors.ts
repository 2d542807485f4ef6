import { sessionGone, type SessionLostError } from '@dlock/lock-api';
import type { IKeyValue } from 'etcd3';
import { type Deadline, type EtcdGateway, get, firstAt } from './etcd.gateway';
import { decodeSession } from './etcd-values.codec';

/**
 * The error for a session whose live key is gone, from its tombstone: SESSION_EXPIRED
 * (details.state CLOSED when L3 marked it, EXPIRED otherwise) while the tombstone is
 * retained (LOCK_SESSION_RETENTION_MS), otherwise SESSION_UNKNOWN (docs/contract.md keeps
 * the two apart so an operator can tell a wrong id from a slow client). Messages match the
 * pg backend (FR-09).
 */
export async function sessionGoneError(
  gw: EtcdGateway,
  sessionId: string,
  deadline: Deadline,
): Promise<SessionLostError> {
  const res = await gw.read([get(gw.keys.sessionMeta(sessionId))], deadline);
  return sessionGoneFrom(firstAt(res, 0));
}

export function sessionGoneFrom(tombstone: IKeyValue | undefined): SessionLostError {
  if (!tombstone) return sessionGone('UNKNOWN');
  return sessionGone(decodeSession(tombstone).closed === true ? 'CLOSED' : 'EXPIRED');
}
