import type { GrantRecord, LockCall, RevocationRecord } from './lock-recorder.infra';

/** What one recorder captured, or several merged into one timeline. */
export interface RecordedLockHistory {
  grants: GrantRecord[];
  revocations: RevocationRecord[];
  calls: LockCall[];
  callsDropped: number;
}

/**
 * The histories of every lock-server replica's recorder as one timeline
 * (docs/harness.md, "Replicas"). The recorders run in this process, so their
 * performance.now() instants are one clock: an overlap between two replicas'
 * grants is as real as one within a replica. Nothing is deduplicated across
 * replicas: two replicas answering the same grant would be a finding, and an
 * executor only ever talks to one replica. Calls are renumbered in arrival
 * order so an explanation names each once.
 */
export function mergeLockHistories(
  recorders: ReadonlyArray<{
    grants: readonly GrantRecord[];
    revocations: readonly RevocationRecord[];
    calls: readonly LockCall[];
    callsDropped: number;
  }>,
): RecordedLockHistory {
  const grants = recorders.flatMap((r) => r.grants).sort((a, b) => a.grantedAt - b.grantedAt);
  const revocations = recorders.flatMap((r) => r.revocations).sort((a, b) => a.at - b.at);
  const calls = recorders
    .flatMap((r) => r.calls)
    .sort((a, b) => a.requestAt - b.requestAt)
    .map((c, seq) => ({ ...c, seq }));
  const callsDropped = recorders.reduce((n, r) => n + r.callsDropped, 0);
  return { grants, revocations, calls, callsDropped };
}
