import { getMaxListeners } from 'node:events';
import type { PayoutSummary } from '@dlock/payout-contract';
import { backlogAgeSeconds, lanesByAccount, shuffled, stopController } from './lanes.rules';

function p(
  payoutId: string,
  accountId: string,
  createdAt = '2030-01-01T00:00:00.000Z',
): PayoutSummary {
  return {
    payoutId,
    accountId,
    amountMinor: 1,
    currency: 'EUR',
    beneficiaryRef: 'ben-1',
    state: 'PENDING',
    attemptCount: 0,
    createdAt,
  };
}

test('one lane per account, in order, without repeats or busy accounts', () => {
  const lanes = lanesByAccount(
    [p('1', 'a'), p('2', 'b'), p('3', 'a'), p('1', 'a'), p('4', 'c')],
    new Set(['c']),
  );
  expect(lanes.map((lane) => lane.map((x) => x.payoutId))).toEqual([['1', '3'], ['2']]);
});

test('a payout this process leaves alone gets no lane; its account still does for the others', () => {
  const refused = new Set(['2', '3']);
  const lanes = lanesByAccount([p('1', 'a'), p('2', 'b'), p('3', 'a')], new Set(), (id) =>
    refused.has(id),
  );
  expect(lanes.map((lane) => lane.map((x) => x.payoutId))).toEqual([['1']]);
});

test('backlog age is the oldest createdAt, 0 when empty', () => {
  const now = Date.parse('2030-01-01T00:00:10.000Z');
  expect(backlogAgeSeconds([], now)).toBe(0);
  expect(
    backlogAgeSeconds(
      [p('1', 'a', '2030-01-01T00:00:08.000Z'), p('2', 'a', '2030-01-01T00:00:04.000Z')],
      now,
    ),
  ).toBe(6);
});

test('shuffled keeps every item exactly once', () => {
  const items = [1, 2, 3, 4, 5, 6];
  expect([...shuffled(items)].sort()).toEqual(items);
  expect(shuffled(items, () => 0)).toEqual([2, 3, 4, 5, 6, 1]);
});

describe('stopController', () => {
  it('lets the 16 lanes and the poll sleep listen at once, and no more, before node warns of a leak', () => {
    // Node warns (MaxListenersExceededWarning) once an AbortSignal has more listeners than this.
    expect(getMaxListeners(stopController(16).signal)).toBe(17);
    expect(getMaxListeners(stopController(1).signal)).toBe(2);
  });
});
