import { SpanStatusCode, context, trace, type Attributes } from '@opentelemetry/api';

/** The ids of the span active here, for log lines; empty outside any trace. */
export function activeTraceFields(): { traceId?: string; spanId?: string } {
  const ctx = trace.getSpanContext(context.active());
  if (!ctx || !trace.isSpanContextValid(ctx)) return {};
  return { traceId: ctx.traceId, spanId: ctx.spanId };
}

/** The trace id active here, if any. */
export function activeTraceId(): string | undefined {
  return activeTraceFields().traceId;
}

const tracer = trace.getTracer('dlock');

/**
 * Runs `fn` as the root span of a new trace: one payout attempt of the
 * executor, one loop iteration of the reconciler (docs/tracing.md). Every call
 * made inside carries this trace's traceparent. Without a started SDK it is a
 * plain call.
 */
export function inRootSpan<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, { root: true, attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}
