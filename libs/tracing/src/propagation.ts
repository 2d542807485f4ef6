import { ROOT_CONTEXT, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Export off (docs/tracing.md): the HTTP instrumentation is not installed,
 * its per-request work cost more than the ids are worth (bench/reports/tracing.md);
 * the HTTP contract's middleware and HttpTransport carry the W3C trace context by
 * hand through the calls below instead. Set by startTracing; off elsewhere (export
 * on, where the instrumentation does it, and in-process tests without tracing).
 */
let manual = false;
const ids = new RandomIdGenerator();

/** Called by startTracing only. */
export function setManualPropagation(on: boolean): void {
  manual = on;
}

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
  if (!manual) return undefined;
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
  if (!manual || hop === undefined) return next();
  const span = trace.wrapSpanContext({ ...hop, traceFlags: TraceFlags.NONE });
  context.with(trace.setSpan(ROOT_CONTEXT, span), next);
}

/**
 * Outbound: adds the active trace's `traceparent` (and `tracestate`) to `headers`,
 * unless the caller set one itself; returns the same object.
 */
export function withTraceHeaders<H extends Record<string, string | number>>(headers: H): H {
  if (manual && !Object.keys(headers).some((name) => name.toLowerCase() === 'traceparent')) {
    propagation.inject(context.active(), headers);
  }
  return headers;
}
