import {
  Counter,
  Gauge,
  Histogram,
  register,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/** A prom-client metric class: what `registered` creates, and checks an existing metric against. */
type MetricClass<M, C> = new (config: C) => M;

type Registers = CounterConfiguration<string>['registers'];

/**
 * The metric of `config.name` already in its registry (the default one unless
 * `config.registers` names others), else a new one registered there. Several apps
 * share one process in tests, and a second registration of a name throws in
 * prom-client: every module that owns a metric asks here instead of constructing it.
 * An existing metric of another type throws: two owners disagree on what the name is.
 */
function registered<M, C extends { name: string; registers?: Registers }>(
  kind: MetricClass<M, C>,
  config: C,
): M {
  for (const registry of config.registers ?? [register]) {
    const existing = registry.getSingleMetric(config.name);
    if (existing === undefined) continue;
    if (existing instanceof kind) return existing;
    const found = existing.constructor.name;
    throw new TypeError(
      `metric ${config.name} is already registered as a ${found}, not a ${kind.name}`,
    );
  }
  return new kind(config);
}

/** The registered counter of this name, or a new one. */
export function counter<T extends string = string>(config: CounterConfiguration<T>): Counter<T> {
  return registered<Counter<T>, CounterConfiguration<T>>(Counter, config);
}

/** The registered gauge of this name, or a new one. */
export function gauge<T extends string = string>(config: GaugeConfiguration<T>): Gauge<T> {
  return registered<Gauge<T>, GaugeConfiguration<T>>(Gauge, config);
}

/** The registered histogram of this name, or a new one. */
export function histogram<T extends string = string>(
  config: HistogramConfiguration<T>,
): Histogram<T> {
  return registered<Histogram<T>, HistogramConfiguration<T>>(Histogram, config);
}
