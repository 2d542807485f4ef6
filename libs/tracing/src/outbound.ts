import { context, propagation } from '@opentelemetry/api';

/**
 * Export off (docs/tracing.md): the HTTP instrumentation is not installed,
 * its per-request work cost more than the ids are worth (bench/reports/tracing.md);
 * the HTTP contract's middleware and HttpTransport carry the W3C trace context by
 * hand instead. Set by startTracing; off elsewhere (export on, where the
 * instrumentation does it, and in-process tests without tracing). Kept in this
 * file, which needs only @opentelemetry/api, because HttpTransport is published
 * in @dlock/http-client and takes it from here (docs/extending.md).
 */
let manual = false;

/** Called by startTracing only. */
export function setManualPropagation(on: boolean): void {
  manual = on;
}

/** Whether this process carries the trace context by hand (see above). */
export function manualPropagation(): boolean {
  return manual;
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
