import {
  grantedTtlMs,
  leaseCoversSubmit,
  leaseDeadlineMs,
  submitBudgetMs,
  submitReadTimeoutMs,
} from './lease';

describe('lease discipline arithmetic', () => {
  test('the submit budget is 1 s connect + rail read timeout + 2 s (C3 §3.8)', () => {
    expect(submitReadTimeoutMs(8_000)).toBe(10_000);
    expect(submitBudgetMs(8_000)).toBe(11_000);
    expect(submitBudgetMs(800)).toBe(3_800);
  });

  test('the granted TTL is the smaller of asked and the server span', () => {
    const at = new Date('2030-01-01T00:00:00.000Z');
    expect(grantedTtlMs(20_000, at, new Date(at.getTime() + 20_000))).toBe(20_000);
    expect(grantedTtlMs(20_000, at, new Date(at.getTime() + 12_000))).toBe(12_000);
    expect(grantedTtlMs(20_000, at, new Date(at.getTime() - 1))).toBe(0);
  });

  test('the local deadline counts from the send time, shortened by the margin', () => {
    expect(leaseDeadlineMs(1_000, 20_000, 0.3)).toBe(15_000);
  });

  test('a submit starts only when the remaining local lease covers the whole budget', () => {
    const deadline = leaseDeadlineMs(0, 20_000, 0.3); // 14 000
    expect(leaseCoversSubmit(deadline, 3_000, 11_000)).toEqual({
      ok: true,
      remainingMs: 11_000,
      requiredMs: 11_000,
    });
    expect(leaseCoversSubmit(deadline, 3_001, 11_000).ok).toBe(false);
    expect(leaseCoversSubmit(deadline, 20_000, 11_000)).toEqual({
      ok: false,
      remainingMs: 0,
      requiredMs: 11_000,
    });
  });

  test('with the lock-server default TTL (15 s) and an 8 s rail the lease can never cover a submit', () => {
    const deadline = leaseDeadlineMs(0, 15_000, 0.3);
    expect(leaseCoversSubmit(deadline, 0, submitBudgetMs(8_000)).ok).toBe(false);
  });
});
