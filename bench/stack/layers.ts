/**
 * The layers of a request that the stack bench takes out one at a time
 * (ablate.ts does it), what each one is, and which services have it.
 */
export interface Layer {
  id: string;
  what: string;
}

export const LAYERS: readonly Layer[] = [
  {
    id: 'auth',
    what: 'authentication gate: bearer JWT (verified once, then a map hit), X-Owner-Id bound to it',
  },
  { id: 'policy', what: 'OperationGuard: the authorisation policy, per route operation' },
  { id: 'deadline-guard', what: 'DeadlineGuard: refuses a caller budget below 50 ms' },
  { id: 'throttler', what: 'IdentityThrottlerGuard (@nestjs/throttler): per-identity rate limit' },
  {
    id: 'guards',
    what: "every guard and Nest's guard consumer (one ExecutionContextHost per request)",
  },
  {
    id: 'validation',
    what: 'ValidationPipe: class-transformer plainToInstance + class-validator on the body and query',
  },
  {
    id: 'compiled-validation',
    what: 'the compiled path of the contract pipe (fast-validation.ts); negative = what the stock ValidationPipe would cost more',
  },
  {
    id: 'pipes',
    what: "Nest's pipe consumer for every handler parameter (ValidationPipe included)",
  },
  {
    id: 'logger',
    what: 'nestjs-pino middlewares (pino-http child logger, AsyncLocalStorage store); the hot routes already exclude them, so here only the exclusion check runs',
  },
  {
    id: 'trace',
    what: 'libs/tracing manual propagation: traceparent parsed on arrival, the handler run in context.with(), traceparent on outbound calls',
  },
  {
    id: 'json-in',
    what: 'lossless-json request body parse (parseRequestBody) instead of JSON.parse',
  },
  { id: 'json-out', what: 'int64Replacer called for every key of every JSON response' },
  { id: 'body', what: 'express.text() body reader (body-parser, raw-body, content-type, iconv)' },
  { id: 'metrics', what: 'prom-client histograms, counters and gauges on the request path' },
  {
    id: 'proofs',
    what: 'Ed25519 grant proofs and payout instructions: signing, and verifying a proof not yet cached',
  },
] as const;

/** Layers that exist on each service's measured routes. */
export const SERVICE_LAYERS: Record<string, readonly string[]> = {
  'lock-server': [
    'auth',
    'policy',
    'deadline-guard',
    'throttler',
    'guards',
    'validation',
    'compiled-validation',
    'pipes',
    'logger',
    'trace',
    'json-in',
    'json-out',
    'body',
    'metrics',
    'proofs',
  ],
  'payment-resource': [
    'auth',
    'policy',
    'guards',
    'validation',
    'compiled-validation',
    'pipes',
    'logger',
    'trace',
    'json-in',
    'json-out',
    'body',
    'metrics',
    'proofs',
  ],
  'rail-proxy': [
    'auth',
    'policy',
    'guards',
    'validation',
    'compiled-validation',
    'pipes',
    'logger',
    'trace',
    'json-in',
    'json-out',
    'body',
    'metrics',
    'proofs',
  ],
  'rail-stub': [
    'validation',
    'compiled-validation',
    'pipes',
    'logger',
    'trace',
    'json-in',
    'body',
    'metrics',
  ],
};

/** Start-up-only variants: a process of its own, compared with the same service's baseline. */
export const STATIC_VARIANTS: readonly { id: string; what: string; env: Record<string, string> }[] =
  [
    {
      id: 'async-context',
      what: 'AsyncLocalStorage never enabled (no async hooks on any promise): nestjs-pino store and OpenTelemetry context gone',
      env: { BENCH_STACK_OFF: 'async-context' },
    },
    {
      id: 'otel-export',
      what: 'OpenTelemetry export on (memory exporter): http, express and pg instrumentations, a span per request, route and statement (added cost, negative)',
      env: { OTEL_TRACES_EXPORTER: 'memory' },
    },
  ];
