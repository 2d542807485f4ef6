import { SafetyEvents } from '@dlock/observability';
import { Registry } from 'prom-client';
import { TokenHighWater } from './token-high-water.repository';

describe('TokenHighWater', () => {
  const setup = () => {
    const registry = new Registry();
    const safety = new SafetyEvents(registry);
    return { registry, safety, highWater: new TokenHighWater(safety) };
  };
  const regressions = async (registry: Registry) =>
    (await registry.getSingleMetric('lock_token_regression_total')!.get()).values.find(
      (v) => v.labels.guard === 'lock-server',
    )?.value;

  it('starts the lock-server series at 0 and is not behind before any token', async () => {
    const { registry, highWater } = setup();
    expect(await regressions(registry)).toBe(0);
    expect(highWater.behind(1n)).toBe(false);
  });

  it('keeps the highest token in any order and is behind only below it', async () => {
    const { registry, highWater } = setup();
    highWater.issued(12n);
    highWater.issued(10n);
    expect(highWater.behind(12n)).toBe(false);
    expect(highWater.behind(40n)).toBe(false);
    expect(highWater.behind(11n)).toBe(true);
    expect(await regressions(registry)).toBe(1);
  });

  it('reports one regression once, and again after the sequence caught up and fell back', async () => {
    const { registry, safety, highWater } = setup();
    highWater.issued(2n ** 60n);
    expect(highWater.behind(7n)).toBe(true);
    expect(highWater.behind(9n)).toBe(true);
    expect(await regressions(registry)).toBe(1);
    const [event] = safety.feed.after(0, 10).events;
    expect(event).toMatchObject({
      event: 'token_regression',
      fields: {
        guard: 'lock-server',
        presentedToken: '7',
        highestToken: (2n ** 60n).toString(),
        source: 'fencing_token_seq',
      },
    });
    expect(highWater.behind(2n ** 60n + 1n)).toBe(false);
    expect(highWater.behind(3n)).toBe(true);
    expect(await regressions(registry)).toBe(2);
  });

  it('judges a probe by the highest token when it was sent: a grant answered while it was in flight is no regression', async () => {
    const { registry, highWater } = setup();
    highWater.issued(51n);
    const before = highWater.mark();
    // The probe read last_value 51; grants 52 and 53 were answered before its row came back.
    highWater.issued(53n);
    expect(highWater.behind(51n, before)).toBe(false);
    expect(await regressions(registry)).toBe(0);
    // The next probe, sent after them, sees the sequence behind 53 only if it truly is.
    expect(highWater.behind(53n, highWater.mark())).toBe(false);
    expect(highWater.behind(52n, highWater.mark())).toBe(true);
  });
});
