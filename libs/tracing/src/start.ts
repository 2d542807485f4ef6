import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { IncomingMessage } from 'node:http';
import { EnvError } from '@dlock/config';
import { BoundedMemoryExporter, type SpanRecord } from './memory-exporter';
import { readTracingConfig, type TracingConfig } from './config';

/** Probes and scrapes would each be a trace of their own, every few seconds, for nothing. */
const UNTRACED_PATHS = /^\/(health|metrics)(\/|\?|$)/;
/** Bound on flushing spans at shutdown; a collector that is down must not hold the exit. */
const SHUTDOWN_FLUSH_MS = 2_000;

let provider: NodeTracerProvider | undefined;
let memory: BoundedMemoryExporter | undefined;
let instrumentations: { disable(): void }[] = [];

function spanProcessor(config: TracingConfig): SpanProcessor[] {
  switch (config.exporter) {
    case 'none':
      return [];
    case 'memory':
      memory = new BoundedMemoryExporter(config.serviceName);
      return [new SimpleSpanProcessor(memory)];
    case 'otlp':
      return [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlpTracesUrl }))];
  }
}

/**
 * Starts OpenTelemetry for one service. It must run before express and pg
 * are loaded (each app's `tracing.ts`, imported first by its main.ts), so
 * the instrumentations can patch them. Without an exporter only the HTTP
 * instrumentation runs: ids are continued or started and forwarded as
 * `traceparent`, spans are not recorded (docs/tracing.md). Only the W3C trace
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
  const exporting = config.exporter !== 'none';
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
    // Off: ids only. On: every span of this service, whatever its caller sampled (docs/tracing.md).
    sampler: exporting ? new AlwaysOnSampler() : new AlwaysOffSampler(),
    spanProcessors: spanProcessor(config),
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  assertPropagator();
  // Each patches its module on construction (and on every later require of it).
  instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.test(req.url ?? ''),
    }),
    ...(exporting
      ? [
          // A span per route handler, named by its route; middleware layers (deadline, body,
          // logger) would only be noise. No Nest instrumentation: its app-creation span would
          // adopt every timer started during boot (pool probes) for the life of the process.
          new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
          // Pool probes and other background statements would each be a trace of their own.
          new PgInstrumentation({ requireParentSpan: true }),
        ]
      : []),
  ];
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
