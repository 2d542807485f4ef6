import type { PayoutState } from '@dlock/payout-contract';
import type { SeenPayout } from '../persistence/fast-transition.repository';
import { SEEN_PAYOUTS_MAX, SeenPayouts } from './seen-payouts.service';

function seen(payoutId: string, state: PayoutState = 'CLAIMED'): SeenPayout {
  return {
    payout: { payoutId, state } as SeenPayout['payout'],
    earlier: null,
    rowVersion: '100',
    account: { version: '101', balanceMinor: 5_000, currency: 'EUR' },
  };
}

describe('SeenPayouts: the rows a payout’s next fast write starts from', () => {
  it('hands an entry out once', () => {
    const cache = new SeenPayouts();
    cache.remember(seen('p-1'));
    expect(cache.take('p-1')?.rowVersion).toBe('100');
    expect(cache.take('p-1')).toBeNull();
  });

  it('keeps the newest rows of a payout', () => {
    const cache = new SeenPayouts();
    cache.remember(seen('p-1'));
    cache.remember({ ...seen('p-1', 'RAIL_SUBMITTED'), rowVersion: '102' });
    expect(cache.take('p-1')).toMatchObject({ rowVersion: '102' });
  });

  it('keeps nothing of a settled payout', () => {
    const cache = new SeenPayouts();
    for (const state of ['POSTED', 'FAILED', 'ABANDONED'] as const) {
      cache.remember(seen(`p-${state}`, state));
      expect(cache.take(`p-${state}`)).toBeNull();
    }
  });

  it('holds at most SEEN_PAYOUTS_MAX payouts, dropping the oldest first', () => {
    const cache = new SeenPayouts();
    for (let i = 0; i <= SEEN_PAYOUTS_MAX; i++) cache.remember(seen(`p-${i}`));
    expect(cache.take('p-0')).toBeNull();
    expect(cache.take('p-1')).not.toBeNull();
    expect(cache.take(`p-${SEEN_PAYOUTS_MAX}`)).not.toBeNull();
  });
});
