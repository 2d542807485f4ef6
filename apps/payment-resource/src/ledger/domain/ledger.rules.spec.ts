import { randomUUID } from 'node:crypto';
import { balancedPair, clearingAccountFor, directionOf, fundingAccountId } from './ledger.rules';

describe('ledger legs', () => {
  it('debits the source and credits the target by the same amount', () => {
    expect(balancedPair('a', 'clearing-EUR', 250)).toEqual([
      { accountId: 'a', counterpartyAccountId: 'clearing-EUR', amountMinor: -250 },
      { accountId: 'clearing-EUR', counterpartyAccountId: 'a', amountMinor: 250 },
    ]);
    expect(directionOf(-250)).toBe('DEBIT');
    expect(directionOf(250)).toBe('CREDIT');
  });

  // A refusal here is a crash (a bug upstream): its message is what the operator reads.
  it('refuses amounts that cannot balance or make no sense, saying why', () => {
    expect(() => balancedPair('a', 'b', 0)).toThrow('amount must be positive');
    expect(() => balancedPair('a', 'b', -1)).toThrow('amount must be positive');
    expect(() => balancedPair('a', 'b', 2 ** 53)).toThrow('amount must be positive');
    expect(() => balancedPair('a', 'a', 1)).toThrow('a movement needs two different accounts');
  });

  it('picks one clearing account per currency, or a stable shard of it by payout id', () => {
    const id = '0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11';
    expect(clearingAccountFor('EUR', id, 1)).toBe('clearing-EUR');
    const shard = clearingAccountFor('EUR', id, 16);
    expect(shard).toMatch(/^clearing-EUR-(0\d|1[0-5])$/);
    expect(clearingAccountFor('EUR', id.toUpperCase(), 16)).toBe(shard);
    expect(clearingAccountFor('GBP', id, 16)).toBe(shard.replace('EUR', 'GBP'));
    // Spread: 2 000 random payouts reach every one of 16 shards.
    const seen = new Set(
      Array.from({ length: 2_000 }, () => clearingAccountFor('EUR', randomUUID(), 16)),
    );
    expect(seen.size).toBe(16);
    expect(() => clearingAccountFor('EUR', id, 0)).toThrow('clearing shards must be 1..64');
    expect(() => clearingAccountFor('EUR', id, 65)).toThrow('clearing shards must be 1..64');
  });

  it('a payout keeps its shard across releases: the hash of the lower-cased id, up to 64 shards', () => {
    // Credit legs already written name these accounts; a different hash would split a payout's legs.
    const id = '5b0e1d0c-3f0a-4f5e-9a39-0c8a4b9f2e11';
    expect(clearingAccountFor('EUR', id, 64)).toBe('clearing-EUR-54');
    expect(clearingAccountFor('EUR', id.toUpperCase(), 64)).toBe('clearing-EUR-54');
    expect(clearingAccountFor('EUR', id, 2)).toBe('clearing-EUR-00');
  });

  it('opening balances come from one funding account per currency', () => {
    expect(fundingAccountId('EUR')).toBe('funding-EUR');
  });
});
