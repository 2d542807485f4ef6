import { isLiveRailOutcome, RAIL_OUTCOMES } from './payout-types';
import {
  idempotencyKeyFor,
  payoutAccountOf,
  payoutLockKey,
  railClientRef,
} from './payout-protocol';

describe('the rail client reference', () => {
  it('is po-<payout id>, lower case, whatever case the id arrives in', () => {
    const id = '0B6F3C1E-8D1A-4A4E-9F00-2F1F6A7F0C11';
    expect(railClientRef(id)).toBe('po-0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11');
    expect(railClientRef(id.toLowerCase())).toBe(railClientRef(id));
  });
});

describe('live rail outcomes', () => {
  it('FENCED and WITHDRAWN presented nothing; unresolved and every other outcome may have paid', () => {
    expect([...RAIL_OUTCOMES, null].filter((o) => !isLiveRailOutcome(o))).toEqual([
      'FENCED',
      'WITHDRAWN',
    ]);
  });
});

describe('the lock key of an account', () => {
  it('is payout:<account id>, and reads back to the account', () => {
    expect(payoutLockKey('acct-1')).toBe('payout:acct-1');
    expect(payoutAccountOf(payoutLockKey('a.b_c-9'))).toBe('a.b_c-9');
  });
});

describe('payoutAccountOf: a key that guards no payout account is null', () => {
  it.each([
    ['payout:acct-1', 'acct-1'],
    ['payout:a.b_c-9', 'a.b_c-9'],
    ['payout:', null],
    ['payout:bad:id', null],
    ['payouts:acct-1', null],
    ['dlock:token-probe', null],
    [`payout:${'x'.repeat(65)}`, null],
  ])('%s -> %s', (key, account) => {
    expect(payoutAccountOf(key)).toBe(account);
  });
});

describe('the idempotency key of a payout', () => {
  it('is payout-<payout id>, lower case, so every writer of the payout shares it', () => {
    expect(idempotencyKeyFor('0B6F3C1E-8D1A-4A4E-9F00-2F1F6A7F0C11')).toBe(
      'payout-0b6f3c1e-8d1a-4a4e-9f00-2f1f6a7f0c11',
    );
  });
});
