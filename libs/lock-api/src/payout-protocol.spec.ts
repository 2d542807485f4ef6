import { isLiveRailOutcome, RAIL_OUTCOMES } from './payout-types';
import { railClientRef } from './payout-protocol';

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
