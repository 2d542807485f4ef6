/**
 * Preloaded into a service by the stack bench (`node -r dist/bench/stack/ablate.js
 * dist/apps/<app>/main.js`, bench/stack/bench.ts): it takes one layer of the
 * request stack out at a time, so the bench can measure what each layer costs
 * per request on the real app modules (bench/reports/stack-cost.md).
 *
 * Bench only. Nothing here is reachable from an app's own entry point; a
 * service started without this preload is the service as deployed.
 *
 * - Layers are switched at run time over the IPC channel the bench opens
 *   (`{op: 'set', off: [...]}`), so every variant runs in the same process on
 *   the same JIT state; `BENCH_STACK_OFF` sets the initial list and is the
 *   only way to switch `async-context` (AsyncLocalStorage cannot be turned
 *   off once a store ran).
 * - Each patch is applied when its module is first loaded (a hook on
 *   require), so the preload changes no load order: tracing.ts still runs
 *   before express and pg load.
 * - `{op: 'stats'}` answers this process's CPU time (process.cpuUsage) and
 *   the statements it sent to PostgreSQL by database (one pg `query` call is
 *   one statement and one round trip).
 */
import Module from 'node:module';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Every layer the bench can take out; see LAYERS in layers.ts for what each one is. */
const off = new Set(
  (process.env.BENCH_STACK_OFF ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const is = (layer: string) => off.has(layer);

type Patch = (exports: any) => void;
/** Patches by the file they apply to (a suffix of its resolved path). */
const patches: [suffix: string, patch: Patch][] = [];
const patched = new WeakSet<object>();

function onLoad(suffix: string, patch: Patch): void {
  patches.push([suffix, patch]);
}

function installLoadHook(): void {
  const mod = Module as any;
  const load = mod._load as (request: string, parent: unknown, isMain: boolean) => unknown;
  mod._load = function (request: string, parent: unknown, isMain: boolean) {
    const exports = load.call(this, request, parent, isMain);
    if (typeof exports !== 'object' && typeof exports !== 'function') return exports;
    if (exports === null || patched.has(exports)) return exports;
    let file: string;
    try {
      file = mod._resolveFilename(request, parent, isMain) as string;
    } catch {
      return exports;
    }
    for (const [suffix, patch] of patches) {
      if (file.endsWith(suffix)) {
        patched.add(exports);
        patch(exports);
      }
    }
    return exports;
  };
}

// ---- identity -------------------------------------------------------------

interface Req extends IncomingMessage {
  identity?: { subject: string; expiresAtMs: number };
  path?: string;
}

onLoad('/dist/libs/http-contract/src/authentication.js', (m) => {
  const original = m.authenticateRequests as (app: any, gate: unknown) => void;
  m.authenticateRequests = (app: any, gate: unknown) => {
    // The original installs one middleware; it runs unless `auth` is off, when the
    // identity is taken from X-Owner-Id (or a fixed name) without any check.
    const proxy = {
      use: (mw: (req: Req, res: ServerResponse, next: () => void) => void) =>
        app.use((req: Req, res: ServerResponse, next: () => void) => {
          if (!is('auth')) return mw(req, res, next);
          const owner = req.headers['x-owner-id'];
          req.identity = {
            subject: typeof owner === 'string' ? owner : 'bench',
            expiresAtMs: Date.now() + 3_600_000,
          };
          next();
        }),
    };
    original(proxy, gate);
  };
});

onLoad('/dist/libs/http-contract/src/operation.js', (m) => {
  guardSwitch(m.OperationGuard, 'policy');
});

onLoad('/dist/libs/http-contract/src/deadline.js', (m) => {
  guardSwitch(m.DeadlineGuard, 'deadline-guard');
});

onLoad('/node_modules/@nestjs/throttler/dist/throttler.guard.js', (m) => {
  guardSwitch(m.ThrottlerGuard, 'throttler');
});

function guardSwitch(guard: { prototype: any }, layer: string): void {
  const original = guard.prototype.canActivate;
  guard.prototype.canActivate = function (context: unknown) {
    return is(layer) ? true : original.call(this, context);
  };
}

onLoad('/node_modules/@nestjs/core/guards/guards-consumer.js', (m) => {
  const original = m.GuardsConsumer.prototype.tryActivate;
  m.GuardsConsumer.prototype.tryActivate = function (...args: unknown[]) {
    return is('guards') ? Promise.resolve(true) : original.apply(this, args);
  };
});

// ---- pipes ----------------------------------------------------------------

onLoad('/node_modules/@nestjs/common/pipes/validation.pipe.js', (m) => {
  const original = m.ValidationPipe.prototype.transform;
  m.ValidationPipe.prototype.transform = function (value: unknown, metadata: unknown) {
    return is('validation') ? value : original.call(this, value, metadata);
  };
});

/**
 * The contract's pipe (fast-validation.ts): `validation` off takes it out too;
 * `compiled-validation` off sends every value the stock pipe's way, which is
 * what the pipe cost before the compiled path (its before/after in one process).
 */
onLoad('/dist/libs/http-contract/src/fast-validation.js', (m) => {
  const own = m.ContractValidationPipe.prototype.transform;
  const stock = Object.getPrototypeOf(m.ContractValidationPipe.prototype).transform;
  m.ContractValidationPipe.prototype.transform = function (value: unknown, metadata: unknown) {
    if (is('validation')) return value;
    return (is('compiled-validation') ? stock : own).call(this, value, metadata);
  };
});

onLoad('/node_modules/@nestjs/core/pipes/pipes-consumer.js', (m) => {
  const original = m.PipesConsumer.prototype.apply;
  m.PipesConsumer.prototype.apply = function (value: unknown, ...rest: unknown[]) {
    return is('pipes') ? Promise.resolve(value) : original.call(this, value, ...rest);
  };
});

// ---- logger ---------------------------------------------------------------

onLoad('/node_modules/nestjs-pino/LoggerModule.js', (m) => {
  const original = m.LoggerModule.prototype.configure;
  m.LoggerModule.prototype.configure = function (consumer: any) {
    // Each of nestjs-pino's middlewares (pino-http, the AsyncLocalStorage store) is
    // skipped while `logger` is off; Nest's own route and exclusion matching still runs.
    const proxy = {
      apply: (...middlewares: ((req: unknown, res: unknown, next: () => void) => void)[]) =>
        consumer.apply(
          ...middlewares.map(
            (mw) =>
              function benchSwitchedLogger(req: unknown, res: unknown, next: () => void) {
                return is('logger') ? next() : mw(req, res, next);
              },
          ),
        ),
    };
    return original.call(this, proxy);
  };
});

// ---- tracing --------------------------------------------------------------

onLoad('/dist/libs/tracing/src/propagation.js', (m) => {
  const inbound = m.inboundTrace;
  const run = m.runInRequestTrace;
  m.inboundTrace = (headers: unknown) => (is('trace') ? undefined : inbound(headers));
  m.runInRequestTrace = (hop: unknown, next: () => void) => (is('trace') ? next() : run(hop, next));
});

onLoad('/dist/libs/tracing/src/outbound.js', (m) => {
  const original = m.withTraceHeaders;
  m.withTraceHeaders = (headers: unknown) => (is('trace') ? headers : original(headers));
});

onLoad('/dist/libs/tracing/src/context.js', (m) => {
  const original = m.inRootSpan;
  m.inRootSpan = (name: string, attributes: unknown, fn: () => Promise<unknown>) =>
    is('trace') ? fn() : original(name, attributes, fn);
});

// ---- JSON -----------------------------------------------------------------

onLoad('/dist/libs/http-contract/src/json.js', (m) => {
  const original = m.parseRequestBody;
  m.parseRequestBody = (text: string) => {
    if (!is('json-in')) return original(text);
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return original(text);
    return value;
  };
});

onLoad('/dist/libs/http-client/src/json.js', (m) => {
  const original = m.parsePeerJson;
  m.parsePeerJson = (text: string) => (is('json-in') ? JSON.parse(text) : original(text));
});

/** Express apps whose `json replacer` was set, and the replacer, to unset and restore it. */
const replacers: { app: any; replacer: unknown }[] = [];

function applyJsonOut(): void {
  for (const { app, replacer } of replacers) {
    app.settings['json replacer'] = is('json-out') ? undefined : replacer;
  }
}

// ---- express --------------------------------------------------------------

onLoad('/node_modules/express/index.js', (m) => {
  const set = m.application.set;
  m.application.set = function (...args: [setting: string, value?: unknown]) {
    const result = set.apply(this, args);
    if (args[0] === 'json replacer' && args.length === 2) {
      replacers.push({ app: this, replacer: args[1] });
      applyJsonOut();
    }
    return result;
  };
  const text = m.text;
  m.text = (options: { limit?: number }) => {
    const parser = text(options);
    const limit = options.limit ?? 100 * 1024;
    return (
      req: IncomingMessage & { body?: unknown },
      res: unknown,
      next: (e?: unknown) => void,
    ) => (is('body') ? leanText(req, limit, next) : parser(req, res, next));
  };
});

/** What the `body` variant reads bodies with: utf-8 text, a size cap, nothing else. */
function leanText(
  req: IncomingMessage & { body?: unknown },
  limit: number,
  next: (e?: unknown) => void,
): void {
  if (
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  ) {
    next();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
  });
  req.on('end', () => {
    req.body = Buffer.concat(chunks).toString('utf8');
    next(size > limit ? Object.assign(new Error('too large'), { status: 413 }) : undefined);
  });
  req.on('error', next);
}

// ---- metrics --------------------------------------------------------------

onLoad('/node_modules/prom-client/lib/histogram.js', (m) =>
  switchMethods(m, ['observe', 'startTimer']),
);
onLoad('/node_modules/prom-client/lib/counter.js', (m) => switchMethods(m, ['inc']));
onLoad('/node_modules/prom-client/lib/gauge.js', (m) => switchMethods(m, ['inc', 'dec', 'set']));

function switchMethods(klass: { prototype: any }, names: string[]): void {
  for (const name of names) {
    const original = klass.prototype[name];
    klass.prototype[name] = function (...args: unknown[]) {
      if (!is('metrics')) return original.apply(this, args);
      return name === 'startTimer' ? () => 0 : undefined;
    };
  }
}

// ---- proofs ---------------------------------------------------------------

onLoad('/dist/libs/identity/src/signing-keys.js', (m) => {
  const original = m.SigningKeyRing.prototype.sign;
  m.SigningKeyRing.prototype.sign = function (typ: string, payload: object) {
    if (!is('proofs')) return original.call(this, typ, payload);
    const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
    return `${b64({ alg: 'EdDSA', kid: 'bench', typ })}.${b64(payload)}.AA`;
  };
});

onLoad('/dist/libs/identity/src/proof-verifier.js', (m) => {
  const original = m.ProofVerifier.prototype.verify;
  m.ProofVerifier.prototype.verify = function (proof: unknown) {
    if (!is('proofs') || typeof proof !== 'string') return original.call(this, proof);
    return Promise.resolve(JSON.parse(Buffer.from(proof.split('.')[1], 'base64url').toString()));
  };
});

// ---- statements -----------------------------------------------------------

/** Statements sent, by database and by the statement's first words. */
const statements = new Map<string, number>();
const STATEMENT_KINDS_MAX = 200;

onLoad('/node_modules/pg/lib/client.js', (m) => {
  const query = m.prototype.query;
  m.prototype.query = function (config: unknown, ...rest: unknown[]) {
    const text =
      typeof config === 'string' ? config : ((config as { text?: string } | null)?.text ?? '');
    const db = (this as { database?: string }).database ?? '?';
    const key = `${db}\t${text.replace(/\s+/g, ' ').trim().slice(0, 72)}`;
    if (statements.has(key) || statements.size < STATEMENT_KINDS_MAX) {
      statements.set(key, (statements.get(key) ?? 0) + 1);
    }
    return query.call(this, config, ...rest);
  };
});

// ---- async context (start-up only) ----------------------------------------

if (is('async-context')) {
  // No store ever runs, so the async hooks AsyncLocalStorage needs are never enabled.
  // Log lines lose their request context and nothing outbound carries a trace: measurement only.
  const als = AsyncLocalStorage.prototype as any;
  als.run = function (_store: unknown, fn: (...a: unknown[]) => unknown, ...args: unknown[]) {
    return fn(...args);
  };
  als.enterWith = () => undefined;
  als.getStore = () => undefined;
}

// ---- control --------------------------------------------------------------

interface Control {
  op: 'set' | 'stats';
  off?: string[];
}

function listen(): void {
  if (typeof process.send !== 'function') return;
  process.on('message', (message: Control) => {
    if (message.op === 'set') {
      const keep = off.has('async-context');
      off.clear();
      for (const layer of message.off ?? []) off.add(layer);
      if (keep) off.add('async-context');
      applyJsonOut();
      process.send!({ op: 'set', off: [...off] });
      return;
    }
    const cpu = process.cpuUsage();
    process.send!({
      op: 'stats',
      cpuUs: cpu.user + cpu.system,
      statements: Object.fromEntries(statements),
    });
  });
  // The channel must not keep a service alive that was told to stop.
  (process as unknown as { channel?: { unref(): void } }).channel?.unref();
}

installLoadHook();
listen();
