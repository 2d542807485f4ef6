import type { LockGrant } from '@dlock/lock-api';

/**
 * The client's belief about when it stops holding something (FR-11, docs/lock-server.md
 * client view). Measured from when the request was SENT — the server started
 * its lease no earlier than that — on the monotonic clock, and shortened by
 * the safety margin so the client gives up before the server expires it.
 */
export function conservativeDeadlineMs(
  sentAtMs: number,
  grantedTtlMs: number,
  safetyMargin: number,
): number {
  return sentAtMs + Math.max(0, grantedTtlMs) * (1 - safetyMargin);
}

/**
 * The lease length a grant actually carries: what was asked for, or less if
 * the server granted less. Only server instants are subtracted from each
 * other; the local wall clock is never consulted.
 */
export function grantedLockTtlMs(requestedTtlMs: number, grant: LockGrant): number {
  const serverSpanMs = grant.expiresAt.getTime() - grant.acquiredAt.getTime();
  return Math.min(requestedTtlMs, serverSpanMs);
}

/** Session lease length after a heartbeat: the granted TTL, or less if the server says so. */
export function heartbeatTtlMs(sessionTtlMs: number, expiresAt: Date, serverTime: Date): number {
  return Math.min(sessionTtlMs, expiresAt.getTime() - serverTime.getTime());
}
