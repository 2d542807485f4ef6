import type { GrantRecord, RevocationRecord } from '../infra/lock-recorder.infra';

/**
 * INV-06 and the lock-server half of INV-04, over the grant history the
 * recorder captured (the logic of apps/lock-server/test/support/history-checker.ts,
 * extended with real-time order across keys and revocation floors).
 *
 * Each grant is reduced to the part of its hold that is certain: from the
 * moment the 200 passed the recorder to the moment a release that succeeded
 * arrived (an expired or revoked grant is just its grant instant). The server's
 * real hold contains that interval, so overlaps found here are real.
 */
export function checkGrantHistory(grants: readonly GrantRecord[]): {
  inv06: string[];
  inv04: string[];
} {
  const inv06: string[] = [];
  const inv04: string[] = [];
  const byKey = new Map<string, GrantRecord[]>();
  for (const g of grants) byKey.set(g.key, [...(byKey.get(g.key) ?? []), g]);
  for (const [key, list] of byKey) {
    const sorted = [...list].sort((a, b) => a.grantedAt - b.grantedAt);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1];
      const next = sorted[i];
      const prevEnd = prev.releaseSentAt ?? prev.grantedAt;
      if (next.grantedAt < prevEnd) {
        inv06.push(
          `${key}: grant ${next.token} to ${next.ownerId} overlaps grant ${prev.token} to ${prev.ownerId} ` +
            `(held until ${(prevEnd - next.grantedAt).toFixed(1)} ms later)`,
        );
      }
      if (next.token <= prev.token) {
        inv06.push(`${key}: token ${next.token} granted after ${prev.token} is not larger`);
      }
    }
  }
  // Real-time order across all keys: a grant requested after another grant was
  // answered must carry a larger token (one global sequence / one etcd revision).
  const answered = [...grants].sort((a, b) => a.grantedAt - b.grantedAt);
  const requested = [...grants].sort((a, b) => a.requestAt - b.requestAt);
  let i = 0;
  let maxDone: GrantRecord | null = null;
  for (const g of requested) {
    while (i < answered.length && answered[i].grantedAt < g.requestAt) {
      if (!maxDone || answered[i].token > maxDone.token) maxDone = answered[i];
      i++;
    }
    if (maxDone && g.token <= maxDone.token) {
      inv04.push(
        `token ${g.token} (${g.key}) was minted after token ${maxDone.token} (${maxDone.key}) had been granted`,
      );
    }
  }
  return { inv06, inv04 };
}

/** L8: a revocation advances the token; later grants of the key start above the floor. */
export function checkRevocations(
  grants: readonly GrantRecord[],
  revocations: readonly RevocationRecord[],
): string[] {
  const out: string[] = [];
  for (const r of revocations) {
    if (r.newTokenFloor <= r.revokedToken) {
      out.push(`${r.key}: revocation floor ${r.newTokenFloor} is not above ${r.revokedToken}`);
    }
    for (const g of grants) {
      if (g.key === r.key && g.requestAt > r.at && g.token < r.newTokenFloor) {
        out.push(
          `${r.key}: token ${g.token} granted after a revocation with floor ${r.newTokenFloor}`,
        );
      }
    }
  }
  return out;
}
