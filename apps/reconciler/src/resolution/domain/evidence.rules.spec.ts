import type { RailLookup, RailTransfer } from '@dlock/payout-contract';
import { attemptEndedAt, classify, evidenceText, type AmbiguousPayout } from './evidence.rules';

const payout: AmbiguousPayout = {
  payoutId: 'p1',
  accountId: 'a1',
  clientRef: 'po-p1',
  amountMinor: 1_000,
  currency: 'EUR',
  attemptEndedAt: new Date('2026-01-01T00:00:10.000Z'),
};

function transfer(over: Partial<RailTransfer> = {}): RailTransfer {
  return {
    railReference: 'rr-1',
    clientRef: 'po-p1',
    amountMinor: 1_000,
    currency: 'EUR',
    acceptedAt: '2026-01-01T00:00:09.000Z',
    settled: true,
    settledAt: '2026-01-01T00:00:14.000Z',
    duplicateOf: null,
    ...over,
  };
}

function lookup(transfers: RailTransfer[], settlementWindowMs: number | null = null): RailLookup {
  return { clientRef: 'po-p1', asOf: '2026-01-01T00:01:00.000Z', settlementWindowMs, transfers };
}

const at = (iso: string) => new Date(iso);

describe('classify (rail evidence for a RAIL_AMBIGUOUS payout)', () => {
  it('one settled, matching transfer is an acknowledgement', () => {
    const t = transfer();
    expect(classify(payout, lookup([t]), at('2026-01-01T00:01:00Z'), 5_000)).toEqual({
      kind: 'acked',
      transfer: t,
    });
  });

  it('one transfer not yet settled waits', () => {
    expect(
      classify(payout, lookup([transfer({ settled: false, settledAt: null })]), new Date(), 0),
    ).toEqual({ kind: 'wait', reason: 'transfer_unsettled' });
  });

  it('two transfers are a duplicate payment, settled or not', () => {
    const ts = [transfer(), transfer({ railReference: 'rr-2', settled: false, settledAt: null })];
    expect(classify(payout, lookup(ts), new Date(), 0)).toEqual({
      kind: 'duplicate',
      transfers: ts,
    });
  });

  it.each([
    [{ amountMinor: 999 }, 'amount 999 != 1000'],
    [{ currency: 'USD' }, 'currency USD != EUR'],
    [{ clientRef: 'po-other' }, 'clientRef po-other != po-p1'],
  ])('a transfer that disagrees with the payout (%j) is a mismatch', (over, reason) => {
    const t = transfer(over);
    expect(classify(payout, lookup([t]), new Date(), 0)).toEqual({
      kind: 'mismatch',
      transfer: t,
      reason,
    });
  });

  it('no transfer inside the window waits; at the window it is not found', () => {
    expect(classify(payout, lookup([]), at('2026-01-01T00:00:14.999Z'), 5_000)).toEqual({
      kind: 'wait',
      reason: 'settlement_window_open',
    });
    expect(classify(payout, lookup([]), at('2026-01-01T00:00:15.000Z'), 5_000)).toEqual({
      kind: 'not_found',
      windowMs: 5_000,
      sinceAttemptMs: 5_000,
    });
  });

  it("the rail's own longer window wins over a shorter configured one", () => {
    expect(classify(payout, lookup([], 60_000), at('2026-01-01T00:00:30Z'), 1_000)).toEqual({
      kind: 'wait',
      reason: 'settlement_window_open',
    });
  });

  it('the attempt ended at the latest stamp', () => {
    expect(
      attemptEndedAt(
        ['2026-01-01T00:00:05.000Z', null, '2026-01-01T00:00:07.000Z'],
        '2026-01-01T00:00:00.000Z',
      ).toISOString(),
    ).toBe('2026-01-01T00:00:07.000Z');
    expect(attemptEndedAt([null], '2026-01-01T00:00:00.000Z').toISOString()).toBe(
      '2026-01-01T00:00:00.000Z',
    );
  });

  it('evidence names the transfer and stays within 1024 characters', () => {
    const v = classify(payout, lookup([transfer()]), new Date(), 0);
    const text = evidenceText(v, lookup([transfer()]));
    expect(text).toContain('railReference=rr-1');
    expect(text.length).toBeLessThanOrEqual(1024);
  });
});
