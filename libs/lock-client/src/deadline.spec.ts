import type { LockGrant } from '@dlock/lock-api';
import { conservativeDeadlineMs, grantedLockTtlMs, heartbeatTtlMs } from './deadline';

const grant = (acquiredMs: number, expiresMs: number): LockGrant => ({
  key: 'k',
  ownerId: 'o',
  sessionId: 's',
  fencingToken: 1n,
  acquiredAt: new Date(acquiredMs),
  expiresAt: new Date(expiresMs),
});

describe('conservative deadline arithmetic (FR-11)', () => {
  it('counts from the send time and keeps (1 - margin) of the TTL', () => {
    expect(conservativeDeadlineMs(1_000, 15_000, 0.3)).toBe(11_500);
    expect(conservativeDeadlineMs(0, 2_000, 0.3)).toBeCloseTo(1_400, 9);
    expect(conservativeDeadlineMs(250.5, 1_000, 0.5)).toBe(750.5);
  });

  it('always ends strictly before the server could expire the lease', () => {
    for (const ttl of [1_000, 1_500, 15_000, 60_000])
      for (const margin of [0.05, 0.3, 0.6]) {
        const sentAt = 123.456;
        // The server starts its lease no earlier than the send time.
        expect(conservativeDeadlineMs(sentAt, ttl, margin)).toBeLessThan(sentAt + ttl);
      }
  });

  it('a non-positive granted TTL yields a deadline already at the send time', () => {
    expect(conservativeDeadlineMs(500, -20, 0.3)).toBe(500);
  });

  it('uses the smaller of the requested TTL and what the server granted', () => {
    expect(grantedLockTtlMs(3_000, grant(0, 3_000))).toBe(3_000);
    expect(grantedLockTtlMs(3_000, grant(0, 2_000))).toBe(2_000);
    // A renew keeps the original acquiredAt: the span is longer than the TTL asked for.
    expect(grantedLockTtlMs(3_000, grant(0, 9_000))).toBe(3_000);
  });

  it('heartbeat: trusts the server span when it is shorter than the session TTL', () => {
    expect(heartbeatTtlMs(3_000, new Date(10_000), new Date(7_000))).toBe(3_000);
    expect(heartbeatTtlMs(3_000, new Date(10_000), new Date(8_500))).toBe(1_500);
  });
});
