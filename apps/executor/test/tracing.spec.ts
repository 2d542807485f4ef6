import { http, waitFor, type RunningApp } from '@dlock/testing';
import {
  seedAccount,
  seedPayout,
  startExecutor,
  startServices,
  waitForState,
  type Services,
} from './support';

/**
 * docs/tracing.md: one payout is one trace. Every process runs with spans kept
 * in memory (OTEL_TRACES_EXPORTER=memory, served at /debug/spans) and debug
 * logs (a line per request, hot routes included); one payout goes through
 * executor → lock-server, payment-resource, rail-proxy → rail-stub.
 */
jest.setTimeout(90_000);

const TRACED = { LOG_LEVEL: 'debug', OTEL_TRACES_EXPORTER: 'memory' };

interface LogLine {
  msg?: string;
  traceId?: string;
  spanId?: string;
  payoutId?: string;
  kind?: string;
  req?: { method: string; url: string };
}

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  service: string;
}

let s: Services;
let exec: RunningApp;

beforeAll(async () => {
  s = await startServices(TRACED);
  exec = await startExecutor(s, 'exec-trace', TRACED);
});

afterAll(async () => {
  await exec?.stop();
  await s?.stop();
});

function logLines(app: RunningApp): LogLine[] {
  return app
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** "METHOD path" of the request lines of `app` in the trace. */
function requestsInTrace(app: RunningApp, traceId: string): string[] {
  return logLines(app)
    .filter((l) => l.traceId === traceId && l.req)
    .map((l) => `${l.req!.method} ${l.req!.url.replace(/\/[^/]*[0-9a-f]{8}-[^/]*/g, '/{id}')}`);
}

async function spansOf(app: RunningApp, traceId: string): Promise<Span[]> {
  const res = await http('GET', `${app.url}/debug/spans?traceId=${traceId}`);
  expect(res.status).toBe(200);
  return (res.body as { spans: Span[] }).spans;
}

test('one payout is one trace: the same trace id in the logs and spans of every service it crossed', async () => {
  const account = await seedAccount(s.paydb);
  const payoutId = await seedPayout(s.paydb, account, 2_500);
  await waitForState(s.paydb, payoutId, ['POSTED']);
  const attempt = await waitFor(
    async () =>
      logLines(exec).find(
        (l) => l.msg === 'payout attempt done' && l.payoutId === payoutId && l.kind === 'posted',
      ),
    10_000,
    'the executor to log the attempt',
  );
  const traceId = attempt.traceId!;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  const lockPath = `/v1/locks/payout%3A${account}`;
  await waitFor(
    async () => requestsInTrace(s.lockServer, traceId).includes(`DELETE ${lockPath}`),
    10_000,
    'the release to be logged',
  );
  expect(requestsInTrace(s.lockServer, traceId)).toEqual([
    `POST ${lockPath}/acquire`,
    `DELETE ${lockPath}`,
  ]);
  expect(requestsInTrace(s.payments, traceId)).toEqual(
    expect.arrayContaining([
      'POST /v1/payouts/{id}/claim',
      'POST /v1/payouts/{id}/rail-outcome',
      'POST /v1/payouts/{id}/post',
    ]),
  );
  expect(requestsInTrace(s.proxy, traceId)).toEqual(['POST /v1/rail/submissions']);
  expect(
    logLines(s.stub)
      .filter((l) => l.traceId === traceId)
      .map((l) => l.msg),
  ).toContain('submit');

  // The spans form one tree under the executor's root span, across the five processes.
  const spans = (
    await Promise.all(
      [exec, s.lockServer, s.payments, s.proxy, s.stub].map((a) => spansOf(a, traceId)),
    )
  ).flat();
  const services = new Set(spans.map((span) => span.service));
  expect([...services].sort()).toEqual([
    'executor',
    'lock-server',
    'payment-resource',
    'rail-proxy',
    'rail-stub',
  ]);
  const ids = new Set(spans.map((span) => span.spanId));
  const roots = spans.filter((span) => span.parentSpanId === null || !ids.has(span.parentSpanId));
  expect(roots).toEqual([
    expect.objectContaining({ name: 'payout attempt', service: 'executor', parentSpanId: null }),
  ]);
});

test('bad input to the span listing gets the envelope', async () => {
  const res = await http('GET', `${exec.url}/debug/spans?traceId=nope`);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({
    code: 'VALIDATION_FAILED',
    message: 'traceId must be 32 lowercase hex digits',
    retrySafe: false,
    traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
  });
});
