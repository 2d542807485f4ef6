import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { IncomingMessage } from 'node:http';
import { BoundedMemoryExporter } from './memory-exporter';
import type { TracingConfig } from './config';

/**
 * What only a service that exports spans needs: the exporters and the
 * instrumentations. start.ts loads this module only then; with export off
 * (the default) these ~300 modules are never read, which is about a sixth of
 * a service's start-up CPU (docs/tracing.md).
 */

/** Probes and scrapes would each be a trace of their own, every few seconds, for nothing. */
const UNTRACED_PATHS = /^\/(health|metrics)(\/|\?|$)/;

export interface Exporting {
  spanProcessors: SpanProcessor[];
  /** Set when OTEL_TRACES_EXPORTER=memory. */
  memory: BoundedMemoryExporter | undefined;
  /** Each patches its module on construction (and on every later require of it). */
  instrumentations: { disable(): void }[];
}

export function startExporting(config: TracingConfig): Exporting {
  const memory =
    config.exporter === 'memory' ? new BoundedMemoryExporter(config.serviceName) : undefined;
  const spanProcessors = memory
    ? [new SimpleSpanProcessor(memory)]
    : [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlpTracesUrl }))];
  const instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.test(req.url ?? ''),
    }),
    // A span per route handler, named by its route; middleware layers (deadline, body,
    // logger) would only be noise. No Nest instrumentation: its app-creation span would
    // adopt every timer started during boot (pool probes) for the life of the process.
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
    // Pool probes and other background statements would each be a trace of their own.
    new PgInstrumentation({ requireParentSpan: true }),
  ];
  return { spanProcessors, memory, instrumentations };
}
