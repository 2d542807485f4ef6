import { RefusalLimiter } from './refusal-limits';

describe('RefusalLimiter', () => {
  let now = 0;
  const limiter = () =>
    new RefusalLimiter({ perSourceMax: 3, logLinesMax: 2, windowMs: 1_000 }, () => now);
  beforeEach(() => (now = 10_000));

  it('admits a source its allowance per window, then names the ms left; other sources are apart', () => {
    const l = limiter();
    expect([l.admit('a'), l.admit('a'), l.admit('a')]).toEqual([0, 0, 0]);
    now += 400;
    expect(l.admit('a')).toBe(600);
    expect(l.admit('b')).toBe(0);
    now += 600;
    expect(l.admit('a')).toBe(0);
  });

  it('logs the first lines of a window; the next logged line carries how many were left out', () => {
    const l = limiter();
    expect([l.logLine(), l.logLine(), l.logLine(), l.logLine()]).toEqual([
      { log: true, suppressed: 0 },
      { log: true, suppressed: 0 },
      { log: false, suppressed: 0 },
      { log: false, suppressed: 0 },
    ]);
    now += 1_000;
    expect(l.logLine()).toEqual({ log: true, suppressed: 2 });
    expect(l.logLine()).toEqual({ log: true, suppressed: 0 });
  });
});
