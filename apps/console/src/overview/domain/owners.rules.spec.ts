import { groupByOwner, withoutGrant, withoutSessionId } from './owners.rules';

const lock = (key: string, ownerId: string) => ({
  key,
  ownerId,
  sessionId: `s-${key}`,
  token: '9007199254740993',
  leaseRemainingMillis: 1_000,
});

describe('groupByOwner', () => {
  it('gives every owner one group with its count, however many rows another owner has', () => {
    const noisy = Array.from({ length: 60 }, (_, i) => lock(`payout:a${i}`, 'executor-noisy'));
    const groups = groupByOwner([...noisy, lock('payout:z', 'executor-1')]);
    expect(groups.map((g) => [g.ownerId, g.count])).toEqual([
      ['executor-1', 1],
      ['executor-noisy', 60],
    ]);
    expect(groups[1].rows.map((r) => r.key).slice(0, 2)).toEqual(['payout:a0', 'payout:a1']);
  });

  it('orders the rows of an owner by the rank given', () => {
    const sessions = [1, 5, 3].map((locksHeld) => ({ ownerId: 'x', locksHeld }));
    const [group] = groupByOwner(sessions, (a, b) => b.locksHeld - a.locksHeld);
    expect(group.rows.map((s) => s.locksHeld)).toEqual([5, 3, 1]);
    expect(groupByOwner([])).toEqual([]);
  });
});

describe('hiding grants', () => {
  it("drops a lock's token and session id, and a session's id", () => {
    expect(withoutGrant(lock('payout:a', 'executor-1'))).toEqual({
      key: 'payout:a',
      ownerId: 'executor-1',
      leaseRemainingMillis: 1_000,
    });
    expect(
      withoutSessionId({
        sessionId: 's',
        ownerId: 'o',
        state: 'ACTIVE',
        ttlMillis: 10,
        ttlRemainingMillis: 5,
        locksHeld: 2,
      }),
    ).toEqual({
      ownerId: 'o',
      state: 'ACTIVE',
      ttlMillis: 10,
      ttlRemainingMillis: 5,
      locksHeld: 2,
    });
  });
});
