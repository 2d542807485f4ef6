import { context, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AlwaysOffSampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { activeTraceFields, inRootSpan } from './context';
import {
  inboundTrace,
  runInRequestTrace,
  setManualPropagation,
  withTraceHeaders,
} from './propagation';

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER = `00-${CALLER_TRACE}-b7ad6b7169203331-01`;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/;

// What startTracing registers with export off: nothing sampled, the W3C propagator.
const provider = new NodeTracerProvider({ sampler: new AlwaysOffSampler() });
beforeAll(() => provider.register({ propagator: new W3CTraceContextPropagator() }));
afterAll(() => provider.shutdown());
beforeEach(() => setManualPropagation(true));

/** The ids on the request, and those active in its handler after an await, as a handler sees them. */
async function idsInRequest(headers: Record<string, string | string[]>) {
  const hop = inboundTrace(headers);
  const seen = await new Promise<{
    traceId?: string;
    spanId?: string;
    outbound: Record<string, string>;
  }>((resolve) =>
    runInRequestTrace(hop, () => {
      void new Promise(setImmediate).then(() =>
        resolve({ ...activeTraceFields(), outbound: withTraceHeaders({ accept: 'x' }) }),
      );
    }),
  );
  return { hop, ...seen };
}

describe('runInRequestTrace (export off)', () => {
  it("continues the caller's trace under a span of this hop, through the handler, and forwards it", async () => {
    const seen = await idsInRequest({ traceparent: CALLER });
    expect(seen.hop).toEqual({ traceId: seen.traceId, spanId: seen.spanId });
    expect(seen.traceId).toBe(CALLER_TRACE);
    expect(seen.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(seen.spanId).not.toBe('b7ad6b7169203331');
    expect(seen.outbound).toEqual({
      accept: 'x',
      traceparent: `00-${CALLER_TRACE}-${seen.spanId}-00`,
    });
  });

  it.each([
    ['absent', {}],
    ['not a traceparent', { traceparent: 'garbage' }],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` }],
    ['an all-zero span id', { traceparent: `00-${CALLER_TRACE}-${'0'.repeat(16)}-01` }],
    ['a short trace id', { traceparent: `00-${CALLER_TRACE.slice(1)}-b7ad6b7169203331-01` }],
    ['version ff', { traceparent: `ff-${CALLER_TRACE}-b7ad6b7169203331-01` }],
  ])('starts a new valid trace when the header is %s', async (_what, headers) => {
    const [a, b] = [await idsInRequest(headers), await idsInRequest(headers)];
    expect(a.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.traceId).not.toMatch(/^0+$/);
    expect(a.traceId).not.toBe(CALLER_TRACE);
    expect(a.traceId).not.toBe(b.traceId);
    expect(TRACEPARENT.exec(a.outbound.traceparent)?.slice(1)).toEqual([a.traceId, a.spanId]);
  });

  it('leaves the context alone when the HTTP instrumentation propagates (export on)', async () => {
    setManualPropagation(false);
    expect(await idsInRequest({ traceparent: CALLER })).toEqual({ outbound: { accept: 'x' } });
  });
});

describe('withTraceHeaders (export off)', () => {
  const active = trace.wrapSpanContext({
    traceId: CALLER_TRACE,
    spanId: '00f067aa0ba902b7',
    traceFlags: 0,
  });
  const inSpan = <T>(fn: () => T) => context.with(trace.setSpan(context.active(), active), fn);

  it('adds the active traceparent to the same headers object', () => {
    const headers = { 'content-length': 2 };
    expect(inSpan(() => withTraceHeaders(headers))).toBe(headers);
    expect(headers).toEqual({
      'content-length': 2,
      traceparent: `00-${CALLER_TRACE}-00f067aa0ba902b7-00`,
    });
  });

  it('never overrides a traceparent the caller set, whatever its case', () => {
    const headers = { TraceParent: CALLER };
    expect(inSpan(() => withTraceHeaders(headers))).toEqual({ TraceParent: CALLER });
  });

  it('adds nothing outside any trace', () => {
    expect(withTraceHeaders({ accept: 'x' })).toEqual({ accept: 'x' });
  });
});

describe('inRootSpan (export off)', () => {
  it('starts a new valid trace per attempt, even inside a request, and forwards it', async () => {
    const inAttempt = () =>
      inRootSpan('payout attempt', {}, async () => ({
        ...activeTraceFields(),
        outbound: withTraceHeaders({}),
      }));
    const [a, b] = await new Promise<Awaited<ReturnType<typeof inAttempt>>[]>((resolve) =>
      runInRequestTrace(inboundTrace({ traceparent: CALLER }), () => {
        void Promise.all([inAttempt(), inAttempt()]).then(resolve);
      }),
    );
    expect(a.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect([a.traceId, b.traceId]).not.toContain(CALLER_TRACE);
    expect(a.traceId).not.toBe(b.traceId);
    expect(a.outbound).toEqual({ traceparent: `00-${a.traceId}-${a.spanId}-00` });
  });
});
