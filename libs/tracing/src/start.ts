import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { EnvError } from '@dlock/config/env';
import type { BoundedMemoryExporter, SpanRecord } from './memory-exporter';
import { readTracingConfig, type TracingConfig } from './config';
import type { Exporting } from './exporting';
import { setManualPropagation } from './propagation';

/** Bound on flushing spans at shutdown; a collector that is down must not hold the exit. */
const SHUTDOWN_FLUSH_MS = 2_000;

let provider: NodeTracerProvider | undefined;
let memory: BoundedMemoryExporter | undefined;
let instrumentations: { disable(): void }[] = [];

/** The exporters and instrumentations, read from disk only when spans are exported. */
function loadExporting(config: TracingConfig): Exporting {
  // A require, not an import: with export off these modules are never loaded (exporting.ts).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startExporting } = require('./exporting') as typeof import('./exporting');
  return startExporting(config);
}

/**
 * Starts OpenTelemetry for one service. It must run before express and pg
 * are loaded (each app's `tracing.ts`, imported first by its main.ts), so
 * the instrumentations can patch them. Without an exporter no instrumentation
 * runs: ids are continued or started and forwarded as `traceparent` by hand
 * (propagation.ts), spans are not recorded (docs/tracing.md). Only the W3C trace
 * context is propagated, never baggage: nothing of a request (a fencing token
 * least of all) travels implicitly.
 */
export function startTracing(service: string): TracingConfig {
  let config: TracingConfig;
  try {
    config = readTracingConfig(service);
  } catch (err) {
    if (!(err instanceof EnvError)) throw err;
    console.error(`[${service}] ${err.message}`);
    process.exit(1);
  }
  const exporting = config.exporter === 'none' ? undefined : loadExporting(config);
  memory = exporting?.memory;
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
    // Off: ids only. On: every span of this service, whatever its caller sampled (docs/tracing.md).
    sampler: exporting ? new AlwaysOnSampler() : new AlwaysOffSampler(),
    spanProcessors: exporting?.spanProcessors ?? [],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  assertPropagator();
  // Export off: no instrumentation at all; the HTTP contract and HttpTransport carry the
  // trace context by hand (propagation.ts), the instrumentation's per-request work was most of
  // the cost of propagation (bench/reports/tracing.md).
  setManualPropagation(!exporting);
  instrumentations = exporting?.instrumentations ?? [];
  return config;
}

function assertPropagator(): void {
  const fields = propagation.fields();
  if (fields.some((f) => f !== 'traceparent' && f !== 'tracestate')) {
    throw new Error(`only the W3C trace context may be propagated, got ${fields.join(', ')}`);
  }
}

/** Flushes and stops the SDK (spans still queued for the collector go out, within a bound). */
export async function stopTracing(): Promise<void> {
  const running = provider;
  provider = undefined;
  if (!running) return;
  setManualPropagation(false);
  for (const instrumentation of instrumentations) instrumentation.disable();
  instrumentations = [];
  await Promise.race([
    running.shutdown(),
    new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_FLUSH_MS).unref()),
  ]);
}

/** Finished spans of this process (oldest first), when OTEL_TRACES_EXPORTER=memory; else undefined. */
export function finishedSpans(traceId?: string): SpanRecord[] | undefined {
  return memory?.finished(traceId);
}
