import { drainBudgetMs, submitBudgetMs, submitReadTimeoutMs } from './lease.rules';

describe('lease discipline arithmetic', () => {
  test('the submit budget is 1 s connect + rail read timeout + 2 s', () => {
    expect(submitReadTimeoutMs(8_000)).toBe(10_000);
    expect(submitBudgetMs(8_000)).toBe(11_000);
    expect(submitBudgetMs(800)).toBe(3_800);
  });

  test('a payout at the rail drains in its submit plus two fenced writes with their one retry', () => {
    // 11 s submit + 2 × (2 × (0.5 s + 3 s) + 1 s between the tries).
    expect(drainBudgetMs(8_000)).toBe(27_000);
    expect(drainBudgetMs(1_000)).toBe(20_000);
  });
});
