import { RefusedPayouts } from './refused-payouts.model';

describe('RefusedPayouts', () => {
  it('remembers what it was told, up to its bound', () => {
    const refused = new RefusedPayouts(3);
    ['p1', 'p2', 'p3'].forEach((id) => refused.add(id));
    expect(['p1', 'p2', 'p3', 'p4'].map((id) => refused.has(id))).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  it('past its bound forgets the oldest first, one for one', () => {
    const refused = new RefusedPayouts(3);
    ['p1', 'p2', 'p3', 'p4'].forEach((id) => refused.add(id));
    expect(['p1', 'p2', 'p3', 'p4'].map((id) => refused.has(id))).toEqual([
      false,
      true,
      true,
      true,
    ]);
  });

  it('a payout refused again is not a new entry and forgets nothing', () => {
    const refused = new RefusedPayouts(2);
    ['p1', 'p2', 'p2'].forEach((id) => refused.add(id));
    expect(['p1', 'p2'].map((id) => refused.has(id))).toEqual([true, true]);
  });

  it('with a bound of one remembers only the latest', () => {
    const refused = new RefusedPayouts(1);
    ['p1', 'p2'].forEach((id) => refused.add(id));
    expect(['p1', 'p2'].map((id) => refused.has(id))).toEqual([false, true]);
  });

  it('refuses a bound below one', () => {
    expect(() => new RefusedPayouts(0)).toThrow('remember at least one payout');
    expect(() => new RefusedPayouts(1.5)).toThrow('remember at least one payout');
  });
});
