import { ROOT_CONTEXT, TraceFlags, context, propagation, trace } from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Export off (docs/tracing.md): the HTTP instrumentation is not installed,
 * its per-request work cost more than the ids are worth (bench/reports/tracing.md);
 * the HTTP contract's middleware and HttpTransport carry the W3C trace context by
 * hand through these two calls instead. Set by startTracing; off elsewhere (export
 * on, where the instrumentation does it, and in-process tests without tracing).
 */
let manual = false;
const ids = new RandomIdGenerator();

/** Called by startTracing only. */
export function setManualPropagation(on: boolean): void {
  manual = on;
}

/**
 * Inbound: runs `next` (the rest of the request) inside the trace the request's
 * `traceparent` names, under a span id of this hop, or inside a new trace when the
 * header is absent or invalid. The request and response emitters are bound too, so
 * body parsing and the `finish` listeners (request log lines) stay in the trace.
 * Nothing is recorded: the span is a non-recording one.
 */
export function runInRequestTrace(
  headers: IncomingHttpHeaders,
  emitters: readonly EventEmitter[],
  next: () => void,
): void {
  if (!manual) return next();
  const caller = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers));
  const span = trace.wrapSpanContext({
    traceId: caller && trace.isSpanContextValid(caller) ? caller.traceId : ids.generateTraceId(),
    spanId: ids.generateSpanId(),
    traceFlags: TraceFlags.NONE,
  });
  const ctx = trace.setSpan(ROOT_CONTEXT, span);
  for (const emitter of emitters) context.bind(ctx, emitter);
  context.with(ctx, next);
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
