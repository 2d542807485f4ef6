import { Counter, Gauge, Histogram, Registry, register } from 'prom-client';
import { counter, gauge, histogram } from './index';

/** The one get-or-register of a metric: several apps share one process in tests. */

it('returns the metric already registered under the name, for each type', () => {
  const registers = [new Registry()];
  const first = counter({ name: 'c_total', help: 'c', labelNames: ['result'], registers });
  expect(first).toBeInstanceOf(Counter);
  expect(counter({ name: 'c_total', help: 'c', labelNames: ['result'], registers })).toBe(first);

  const g = gauge({ name: 'g', help: 'g', registers });
  expect(g).toBeInstanceOf(Gauge);
  expect(gauge({ name: 'g', help: 'g', registers })).toBe(g);

  const h = histogram({ name: 'h_seconds', help: 'h', buckets: [1, 2], registers });
  expect(h).toBeInstanceOf(Histogram);
  expect(histogram({ name: 'h_seconds', help: 'h', buckets: [1, 2], registers })).toBe(h);
  expect(registers[0].getMetricsAsArray()).toHaveLength(3);
});

it('throws when the name is registered as another type', () => {
  const registers = [new Registry()];
  counter({ name: 'x_total', help: 'x', registers });
  expect(() => gauge({ name: 'x_total', help: 'x', registers })).toThrow(
    'metric x_total is already registered as a Counter, not a Gauge',
  );
  expect(() => histogram({ name: 'x_total', help: 'x', registers })).toThrow(TypeError);
  // The existing counter is left as it was.
  expect(registers[0].getSingleMetric('x_total')).toBeInstanceOf(Counter);
});

it('looks up and registers in the default registry when none is named', async () => {
  const name = 'metrics_helper_spec_total';
  try {
    const made = counter({ name, help: 'spec' });
    expect(register.getSingleMetric(name)).toBe(made);
    made.inc(2);
    expect(counter({ name, help: 'spec' })).toBe(made);
    expect((await made.get()).values[0]?.value).toBe(2);
  } finally {
    register.removeSingleMetric(name);
  }
});

it('keeps registries apart: a metric of one is not returned for another', () => {
  const a = counter({ name: 'same_total', help: 's', registers: [new Registry()] });
  const b = counter({ name: 'same_total', help: 's', registers: [new Registry()] });
  expect(b).not.toBe(a);
});
