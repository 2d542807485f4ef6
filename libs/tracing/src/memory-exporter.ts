import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** What a test or bench needs of a finished span. */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  service: string;
}

/** Enough for a test's payouts; once reached, the older half is dropped. */
export const MEMORY_SPANS_MAX = 10_000;

/**
 * OTEL_TRACES_EXPORTER=memory: keeps the last finished spans (at most
 * MEMORY_SPANS_MAX) in the process, for tests (GET /debug/spans) and for the bench's "export
 * on" figure without a collector's network cost.
 */
export class BoundedMemoryExporter implements SpanExporter {
  private spans: SpanRecord[] = [];

  constructor(private readonly service: string) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) {
      const ctx = span.spanContext();
      this.spans.push({
        traceId: ctx.traceId,
        spanId: ctx.spanId,
        parentSpanId: span.parentSpanContext?.spanId ?? null,
        name: span.name,
        service: this.service,
      });
    }
    // Trimmed by half at a time: one copy per MEMORY_SPANS_MAX / 2 spans, not one per span.
    if (this.spans.length > MEMORY_SPANS_MAX) this.spans = this.spans.slice(-MEMORY_SPANS_MAX / 2);
    done({ code: ExportResultCode.SUCCESS });
  }

  finished(traceId?: string): SpanRecord[] {
    return traceId === undefined
      ? [...this.spans]
      : this.spans.filter((s) => s.traceId === traceId);
  }

  shutdown(): Promise<void> {
    this.spans = [];
    return Promise.resolve();
  }
}
