import { judge, OpenFindings } from './rail-sweep-findings.rules';

const payout = (payoutId: string, state: 'POSTED' | 'FAILED' | 'ABANDONED') => ({
  payoutId,
  state,
  terminalAt: '2026-01-01T00:00:00.000000Z',
  clientRef: `po-${payoutId}`,
});

describe('rail sweep findings (what the rail says about a terminal payout)', () => {
  it('judges each terminal state against the number of transfers booked', () => {
    expect([0, 1, 2].map((n) => judge('POSTED', n))).toEqual([
      ['posted_without_transfer'],
      [],
      ['rail_double_payment'],
    ]);
    for (const state of ['FAILED', 'ABANDONED'] as const) {
      expect([0, 1, 3].map((n) => judge(state, n))).toEqual([
        [],
        ['paid_but_not_posted'],
        ['rail_double_payment', 'paid_but_not_posted'],
      ]);
    }
  });

  it('a finding is fresh once per payout, stays open while seen, and closes when gone', () => {
    const open = new OpenFindings(100);
    const twice = payout('a', 'POSTED');
    expect(open.observe(twice, ['r1', 'r2'], 't1')).toEqual([
      {
        finding: 'rail_double_payment',
        payoutId: 'a',
        clientRef: 'po-a',
        state: 'POSTED',
        terminalAt: twice.terminalAt,
        railReferences: ['r1', 'r2'],
        detectedAt: 't1',
      },
    ]);
    // Seen again, with a third transfer: not fresh, but the report shows every reference.
    expect(open.observe(twice, ['r1', 'r2', 'r3'], 't2')).toEqual([]);
    expect(open.list(10)).toEqual([
      expect.objectContaining({ railReferences: ['r1', 'r2', 'r3'], detectedAt: 't1' }),
    ]);
    expect(open.count('rail_double_payment')).toBe(1);
    open.observe(twice, ['r1'], 't3');
    expect(open.count('rail_double_payment')).toBe(0);
  });

  it('memory is bounded: past the cap the oldest findings are forgotten', () => {
    const open = new OpenFindings(2);
    for (const id of ['a', 'b', 'c']) open.observe(payout(id, 'FAILED'), ['r'], 't');
    expect(open.list(10).map((f) => f.payoutId)).toEqual(['b', 'c']);
    expect(open.count('paid_but_not_posted')).toBe(2);
  });
});
