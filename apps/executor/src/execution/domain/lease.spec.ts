import { submitBudgetMs, submitReadTimeoutMs } from './lease';

describe('lease discipline arithmetic', () => {
  test('the submit budget is 1 s connect + rail read timeout + 2 s', () => {
    expect(submitReadTimeoutMs(8_000)).toBe(10_000);
    expect(submitBudgetMs(8_000)).toBe(11_000);
    expect(submitBudgetMs(800)).toBe(3_800);
  });
});
