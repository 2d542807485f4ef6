import { joinFences } from './fences.rules';

describe('joinFences', () => {
  it('puts each account fence next to its rail high-water mark and flags where they differ', () => {
    const rows = joinFences(
      [
        { accountId: 'acct-b', currency: 'EUR', balanceMinor: 500, fence: '9007199254740993' },
        { accountId: 'acct-a', currency: 'EUR', balanceMinor: 100, fence: '7' },
        { accountId: 'acct-c', currency: 'EUR', balanceMinor: 0, fence: '3' },
        // never paid out: no token at either guard
        { accountId: 'acct-e', currency: 'EUR', balanceMinor: 0, fence: '0' },
      ],
      [
        { accountId: 'acct-a', highWater: '7' },
        // beyond 2^53: compared as integers, not as rounded numbers
        { accountId: 'acct-b', highWater: '9007199254740992' },
        { accountId: 'acct-d', highWater: '4' },
      ],
    );
    expect(rows).toEqual([
      {
        accountId: 'acct-a',
        currency: 'EUR',
        balanceMinor: 100,
        fence: '7',
        highWater: '7',
        agree: true,
      },
      {
        accountId: 'acct-b',
        currency: 'EUR',
        balanceMinor: 500,
        fence: '9007199254740993',
        highWater: '9007199254740992',
        agree: false,
      },
      {
        accountId: 'acct-c',
        currency: 'EUR',
        balanceMinor: 0,
        fence: '3',
        highWater: null,
        agree: false,
      },
      {
        accountId: 'acct-d',
        currency: null,
        balanceMinor: null,
        fence: null,
        highWater: '4',
        agree: false,
      },
      {
        accountId: 'acct-e',
        currency: 'EUR',
        balanceMinor: 0,
        fence: '0',
        highWater: null,
        agree: true,
      },
    ]);
  });
});
