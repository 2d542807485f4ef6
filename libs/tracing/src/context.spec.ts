import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { activeTraceFields, inRootSpan } from './context';
import { BoundedMemoryExporter, MEMORY_SPANS_MAX } from './memory-exporter';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => provider.register());
afterEach(() => exporter.reset());
afterAll(() => provider.shutdown());

describe('inRootSpan', () => {
  it('starts a new trace even inside another span, active for the whole call, ended after it', async () => {
    const outer = trace.getTracer('test').startSpan('outer');
    const seen = await context.with(trace.setSpan(context.active(), outer), () =>
      inRootSpan('payout attempt', { 'dlock.payout_id': 'p-1' }, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return activeTraceFields();
      }),
    );
    outer.end();
    const [attempt] = exporter.getFinishedSpans().filter((s) => s.name === 'payout attempt');
    expect(seen).toEqual({
      traceId: attempt.spanContext().traceId,
      spanId: attempt.spanContext().spanId,
    });
    expect(attempt.spanContext().traceId).not.toBe(outer.spanContext().traceId);
    expect(attempt.parentSpanContext).toBeUndefined();
    expect(attempt.attributes).toEqual({ 'dlock.payout_id': 'p-1' });
  });

  it('gives every call its own trace, and marks a failed one', async () => {
    const ids = [
      await inRootSpan('a', {}, async () => activeTraceFields().traceId),
      await inRootSpan('a', {}, async () => activeTraceFields().traceId),
    ];
    expect(new Set(ids).size).toBe(2);
    await expect(
      inRootSpan('b', {}, async () => {
        throw new Error('rail down');
      }),
    ).rejects.toThrow('rail down');
    const failed = exporter.getFinishedSpans().find((s) => s.name === 'b')!;
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'rail down' });
  });

  it('leaves log lines outside any span without ids', () => {
    expect(activeTraceFields()).toEqual({});
  });
});

describe('BoundedMemoryExporter', () => {
  it('keeps the newest spans, dropping the older half once MEMORY_SPANS_MAX is passed', async () => {
    const memory = new BoundedMemoryExporter('svc');
    for (let i = 0; i <= MEMORY_SPANS_MAX; i++) {
      await inRootSpan(`s${i}`, {}, async () => undefined);
    }
    const spans = exporter.getFinishedSpans();
    memory.export(spans, () => undefined);
    const kept = memory.finished();
    expect(kept).toHaveLength(MEMORY_SPANS_MAX / 2);
    expect(kept.at(-1)).toEqual({
      traceId: spans.at(-1)!.spanContext().traceId,
      spanId: spans.at(-1)!.spanContext().spanId,
      parentSpanId: null,
      name: `s${MEMORY_SPANS_MAX}`,
      service: 'svc',
    });
    expect(memory.finished(spans.at(-1)!.spanContext().traceId)).toHaveLength(1);
    expect(memory.finished(spans[0].spanContext().traceId)).toEqual([]);
  });
});
