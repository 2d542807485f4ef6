import { performance } from 'node:perf_hooks';

/**
 * Recorded history of a lock workload, and the checker of its two safety
 * properties: no two grants of a key overlap, and tokens strictly increase in
 * grant order.
 *
 * Times are this process's monotonic clock. Each grant is reduced to the part
 * of its hold the client KNOWS it had: from the moment the grant response
 * arrived to the moment the release request was sent (only when the release
 * succeeded; otherwise just the arrival instant). The server's real hold
 * contains that interval, so on a correct server these intervals never
 * overlap; the checker therefore never raises a false alarm, and any overlap
 * it finds is a real mutual-exclusion violation.
 */
export interface GrantRecord {
  key: string;
  holder: string;
  token: bigint;
  /** performance.now() when the grant response arrived. */
  grantedAt: number;
  /** performance.now() when a release that then succeeded was sent; null if none did. */
  releaseSentAt: number | null;
}

export class HistoryRecorder {
  readonly records: GrantRecord[] = [];

  /** Call right after a 200 acquire response; returns the record to close later. */
  granted(key: string, holder: string, token: string | bigint): GrantRecord {
    const record: GrantRecord = {
      key,
      holder,
      token: typeof token === 'bigint' ? token : BigInt(token),
      grantedAt: performance.now(),
      releaseSentAt: null,
    };
    this.records.push(record);
    return record;
  }

  /** Call with the instant the release was SENT, once it answered 204. */
  released(record: GrantRecord, sentAt: number): void {
    record.releaseSentAt = sentAt;
  }
}

export interface HistoryVerdict {
  grants: number;
  violations: string[];
}

export function checkHistory(records: readonly GrantRecord[]): HistoryVerdict {
  const violations: string[] = [];
  const byKey = new Map<string, GrantRecord[]>();
  for (const r of records) {
    const list = byKey.get(r.key) ?? [];
    list.push(r);
    byKey.set(r.key, list);
  }
  for (const [key, list] of byKey) {
    const sorted = [...list].sort((a, b) => a.grantedAt - b.grantedAt);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1];
      const next = sorted[i];
      // L4 answers a session that re-acquires a key it still holds with that same grant
      // (here: after its release went unconfirmed, e.g. while the etcd leader was stopped).
      // One grant seen twice; a repeat after a confirmed release is still a violation.
      if (next.holder === prev.holder && next.token === prev.token && prev.releaseSentAt === null) {
        continue;
      }
      const prevEnd = prev.releaseSentAt ?? prev.grantedAt;
      if (next.grantedAt < prevEnd) {
        violations.push(
          `${key}: grant ${next.token} to ${next.holder} at ${next.grantedAt.toFixed(3)} ms ` +
            `overlaps grant ${prev.token} to ${prev.holder} held until ${prevEnd.toFixed(3)} ms`,
        );
      }
      if (next.token <= prev.token) {
        violations.push(
          `${key}: token ${next.token} (${next.holder}) granted after ${prev.token} (${prev.holder}) is not larger`,
        );
      }
    }
  }
  return { grants: records.length, violations };
}
