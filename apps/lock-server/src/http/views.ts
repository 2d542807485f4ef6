import {
  formatFencingToken,
  formatInstant,
  type LockGrant,
  type LockGrantDto,
  type LockInfo,
  type LockOutcome,
} from '@dlock/lock-api';
import type { HeartbeatResult, OpenedSession } from '../store/lock-store.port';
import type { RevocationRequest } from '../store/revocation-requests.port';

/** Wire shapes of C3 §3.3: tokens as decimal strings, instants RFC 3339 UTC ms. */
export function grantView(grant: LockGrant): LockGrantDto {
  return {
    key: grant.key,
    ownerId: grant.ownerId,
    sessionId: grant.sessionId,
    fencingToken: formatFencingToken(grant.fencingToken),
    acquiredAt: formatInstant(grant.acquiredAt),
    expiresAt: formatInstant(grant.expiresAt),
  };
}

export function sessionView(session: OpenedSession) {
  return {
    sessionId: session.sessionId,
    ownerId: session.ownerId,
    ttlMillis: session.ttlMillis,
    expiresAt: formatInstant(session.expiresAt),
  };
}

export function heartbeatView(beat: HeartbeatResult) {
  return {
    sessionId: beat.sessionId,
    expiresAt: formatInstant(beat.expiresAt),
    serverTime: formatInstant(beat.serverTime),
    heldLockCount: beat.heldLockCount,
  };
}

export function lockInfoView(info: LockInfo) {
  if (!info.held) return { key: info.key, held: false, waiterCount: info.waiterCount };
  return {
    key: info.key,
    held: true,
    ownerId: info.ownerId,
    fencingToken:
      info.fencingToken === undefined ? undefined : formatFencingToken(info.fencingToken),
    acquiredAt: info.acquiredAt && formatInstant(info.acquiredAt),
    expiresAt: info.expiresAt && formatInstant(info.expiresAt),
    waiterCount: info.waiterCount,
  };
}

export function outcomeView(outcome: LockOutcome) {
  return {
    revokedToken: formatFencingToken(outcome.revokedToken),
    newTokenFloor: formatFencingToken(outcome.newTokenFloor),
    revocationId: outcome.revocationId,
  };
}

/** 202 of a two-person revoke: what was asked, by whom, and until when a second operator may approve. */
export function revocationRequestView(r: RevocationRequest) {
  return {
    requestId: r.requestId,
    key: r.key,
    status: 'PENDING_APPROVAL',
    operator: r.operator,
    reason: r.reason,
    requestedBy: r.requestedBy,
    requestedAt: formatInstant(r.requestedAt),
    expiresAt: formatInstant(r.expiresAt),
  };
}
