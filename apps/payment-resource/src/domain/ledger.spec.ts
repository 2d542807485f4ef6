import { balancedPair, clientRefFor, directionOf } from './ledger';

describe('ledger legs', () => {
  it('debits the source and credits the target by the same amount', () => {
    expect(balancedPair('a', 'clearing-EUR', 250)).toEqual([
      { accountId: 'a', counterpartyAccountId: 'clearing-EUR', amountMinor: -250 },
      { accountId: 'clearing-EUR', counterpartyAccountId: 'a', amountMinor: 250 },
    ]);
    expect(directionOf(-250)).toBe('DEBIT');
    expect(directionOf(250)).toBe('CREDIT');
  });

  it('refuses amounts that cannot balance or make no sense', () => {
    expect(() => balancedPair('a', 'b', 0)).toThrow();
    expect(() => balancedPair('a', 'b', -1)).toThrow();
    expect(() => balancedPair('a', 'b', 2 ** 53)).toThrow();
    expect(() => balancedPair('a', 'a', 1)).toThrow();
  });

  it('derives a stable client reference', () => {
    const id = '0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11';
    expect(clientRefFor(id)).toBe(`po-${id}`);
    expect(clientRefFor(id)).toBe(clientRefFor(id));
  });
});
