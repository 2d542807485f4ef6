import { advanceCursor, type Handled } from './revocation-cursor.rules';

describe('advanceCursor', () => {
  const NOW = 1_000_000;
  const SETTLE = 60_000;
  const old = (floor: bigint, done = true): Handled => ({
    newTokenFloor: floor,
    revokedAtMs: NOW - SETTLE,
    done,
  });
  const recent = (floor: bigint): Handled => ({
    newTokenFloor: floor,
    revokedAtMs: NOW - 1,
    done: true,
  });

  it('moves past every settled, done revocation', () => {
    expect(advanceCursor(5n, [old(7n), old(9n)], NOW, SETTLE)).toBe(9n);
  });

  it('stops before the first pending one, so the next pass retries it', () => {
    expect(advanceCursor(5n, [old(7n), old(9n, false), old(11n)], NOW, SETTLE)).toBe(7n);
  });

  it('stops before a recent one, so a lower floor committing late is still read', () => {
    expect(advanceCursor(5n, [old(7n), recent(9n), old(11n)], NOW, SETTLE)).toBe(7n);
  });

  it('stays put with nothing handled', () => {
    expect(advanceCursor(5n, [], NOW, SETTLE)).toBe(5n);
  });
});
