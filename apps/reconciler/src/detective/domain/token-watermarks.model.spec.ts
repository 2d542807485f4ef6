import { TokenWatermarks } from './token-watermarks.model';

const m = (entries: [string, bigint][]) => new Map(entries);

describe('TokenWatermarks (INV-04 detective control)', () => {
  it('a first sighting and every rise are quiet', () => {
    const w = new TokenWatermarks();
    expect(w.observe('account', m([['a', 5n]]))).toEqual([]);
    expect(w.observe('account', m([['a', 5n]]))).toEqual([]);
    expect(
      w.observe(
        'account',
        m([
          ['a', 9n],
          ['b', 1n],
        ]),
      ),
    ).toEqual([]);
  });

  it('a value below the highest seen is a regression, fresh once, reported while it lasts', () => {
    const w = new TokenWatermarks();
    w.observe('rail', m([['a', 2n ** 53n + 1n]]));
    expect(w.observe('rail', m([['a', 2n ** 53n]]))).toEqual([
      {
        guard: 'rail',
        accountId: 'a',
        highestSeen: 2n ** 53n + 1n,
        observed: 2n ** 53n,
        fresh: true,
      },
    ]);
    expect(w.observe('rail', m([['a', 2n ** 53n]]))).toEqual([
      {
        guard: 'rail',
        accountId: 'a',
        highestSeen: 2n ** 53n + 1n,
        observed: 2n ** 53n,
        fresh: false,
      },
    ]);
    // Climbing back above the old mark ends it.
    expect(w.observe('rail', m([['a', 2n ** 53n + 2n]]))).toEqual([]);
  });

  it('a vanished row counts as a regression', () => {
    const w = new TokenWatermarks();
    w.observe('account', m([['a', 3n]]));
    expect(w.observe('account', m([]))).toEqual([
      { guard: 'account', accountId: 'a', highestSeen: 3n, observed: null, fresh: true },
    ]);
  });

  it('the two guards are tracked separately', () => {
    const w = new TokenWatermarks();
    w.observe('account', m([['a', 10n]]));
    expect(w.observe('rail', m([['a', 1n]]))).toEqual([]);
  });
});
