import { ROOT_CONTEXT, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';
import { manualPropagation } from './outbound';

// The switch and the outbound half live in outbound.ts (its comment says why).
export { setManualPropagation, withTraceHeaders } from './outbound';

const ids = new RandomIdGenerator();

/** The ids one hop runs under: the caller's trace id (or a new one) and a span id of this hop. */
export interface HopTrace {
  readonly traceId: string;
  readonly spanId: string;
}

/**
 * Inbound, on arrival: the trace the request's `traceparent` names, under a
 * new span id of this hop, or a new trace when the header is absent or
 * invalid; `undefined` when the HTTP instrumentation propagates (export on).
 * Parsed once and kept on the request; no async context is entered here.
 */
export function inboundTrace(headers: IncomingHttpHeaders): HopTrace | undefined {
  if (!manualPropagation()) return undefined;
  const caller = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers));
  return {
    traceId: caller && trace.isSpanContextValid(caller) ? caller.traceId : ids.generateTraceId(),
    spanId: ids.generateSpanId(),
  };
}

/**
 * Runs `next` (the request's handler, once its body is read) with `hop` as the
 * active, non-recording span, so its log lines and outbound calls carry it.
 * One context entry per request and nothing else: binding the request and
 * response emitters as well (so body parsing stayed in the trace) patched six
 * methods on each and was most of the export-off cost (bench/reports/tracing.md).
 */
export function runInRequestTrace(hop: HopTrace | undefined, next: () => void): void {
  if (!manualPropagation() || hop === undefined) return next();
  const span = trace.wrapSpanContext({ ...hop, traceFlags: TraceFlags.NONE });
  context.with(trace.setSpan(ROOT_CONTEXT, span), next);
}
