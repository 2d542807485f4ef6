import { applyDecorators, type INestApplication } from '@nestjs/common';
import {
  ApiHeader,
  ApiQuery,
  ApiResponse,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import type {
  OperationObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { Request, Response } from 'express';
import assert from 'node:assert';
import {
  BUILT_IN_ERROR_CODES,
  errorCodeSpec,
  OWNER_ID_MAX_LENGTH,
  PROOF_BYTES_MAX,
  REQUEST_DEADLINE_HEADER,
  REQUEST_DEADLINE_MAX_MS,
  type ErrorCode,
} from '@dlock/lock-api';
import { int64Text, NAMED_SCHEMAS, objectSchema, type WireProperties } from './schema';
import { TOKEN_BYTES_MAX } from '@dlock/identity';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from './headers';
import { READ_LIMIT } from './read-query';

/**
 * The OpenAPI description of a service (docs/contract.md): served at
 * `GET /openapi.json` and written to `docs/openapi/` by `npm run openapi`.
 * Controllers declare what is theirs (summary, bodies, headers, success and
 * route-specific errors); what every route shares (the envelope's common
 * codes, the bearer token, `traceparent`, the deadline header) is added here
 * once, so a route cannot forget it.
 */
export const OPENAPI_PATH = '/openapi.json';
/** Where a service that signs (lock-server, payment-resource) publishes its public keys. */
export const JWKS_PATH = '/.well-known/jwks.json';

export * from './schema';

/**
 * Registers a named component schema and returns its reference. The property
 * map is keyed by the wire type, so a field added to or dropped from the type
 * without the schema does not compile.
 */
export function wireSchema<T extends object>(
  name: string,
  properties: WireProperties<T>,
  optional: (keyof T & string)[] = [],
  description?: string,
): ReferenceObject {
  const schema = objectSchema<T>(properties, optional, description);
  const existing = NAMED_SCHEMAS.get(name);
  assert(
    existing === undefined || JSON.stringify(existing) === JSON.stringify(schema),
    `two different schemas named ${name}`,
  );
  NAMED_SCHEMAS.set(name, schema);
  return schemaRef(name);
}

/** A reference to a named schema, e.g. one of payout-contract's PAYOUT_WIRE_SCHEMAS. */
export function schemaRef(name: string): ReferenceObject {
  return { $ref: `#/components/schemas/${name}` };
}

/** A nullable variant of a schema (OpenAPI 3.0 `nullable`). */
export function nullable(schema: SchemaObject): SchemaObject {
  return { ...schema, nullable: true };
}

const ENVELOPE_REF = wireSchema<{
  code: unknown;
  message: unknown;
  retrySafe: unknown;
  retryAfterMillis: unknown;
  details: unknown;
  traceId: unknown;
}>(
  'ErrorEnvelope',
  {
    code: {
      type: 'string',
      // Filled in when a document is built: the codes the service registered by then.
      enum: [],
      description: 'Stable machine code (docs/contract.md, "Error catalogue")',
    },
    message: { type: 'string', description: 'For humans; not stable' },
    retrySafe: {
      type: 'boolean',
      description: 'May the identical request be re-sent with the same token',
    },
    retryAfterMillis: { type: 'integer', minimum: 0 },
    details: { type: 'object', additionalProperties: true },
    traceId: { type: 'string', pattern: '^[0-9a-f]{32}$' },
  },
  ['retryAfterMillis', 'details'],
  'Every non-2xx answer of every service but a stand-in for a third party, which answers its own way',
);

/** One error a route may answer: a catalogue code, at its catalogue status or an override. */
export type ContractError = ErrorCode | readonly [ErrorCode, number];

function byStatus(errors: readonly ContractError[]): Map<number, ErrorCode[]> {
  const grouped = new Map<number, ErrorCode[]>();
  for (const e of errors) {
    const [code, status] = typeof e === 'string' ? [e, errorCodeSpec(e).httpStatus] : e;
    const codes = grouped.get(status) ?? [];
    if (!codes.includes(code)) codes.push(code);
    grouped.set(status, codes.sort());
  }
  return grouped;
}

function envelopeResponse(codes: ErrorCode[]): ResponseObject {
  return {
    description: codes.join(', '),
    content: {
      'application/json': {
        schema: {
          allOf: [ENVELOPE_REF, { type: 'object', properties: { code: { enum: codes } } }],
        },
      },
    },
  };
}

/** Route errors declared but not yet applied: a code may be registered after its controller loads. */
const pendingRouteErrors: (() => void)[] = [];

/**
 * The route-specific errors of a route, as envelopes grouped by status, e.g.
 * `@ApiContractErrors('FENCED_OUT', 'LOCK_LOST', ['VALIDATION_FAILED', 422])`.
 * The errors every route shares are added by the document builder. Applied by
 * {@link resolveRouteErrors}: controllers load before their app's module body registers its
 * codes, so a status is looked up only once the app is built.
 */
export function ApiContractErrors(...errors: ContractError[]): MethodDecorator & ClassDecorator {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    pendingRouteErrors.push(() =>
      applyDecorators(
        ...[...byStatus(errors)].map(([status, codes]) =>
          ApiResponse({ status, ...envelopeResponse(codes) }),
        ),
      )(target, key as string | symbol, descriptor as PropertyDescriptor),
    );
  };
}

/**
 * Applies every route's declared errors; throws for a code this process never registered, so
 * a route declaring one stops the service at boot (serveOpenApiDocument calls it).
 */
export function resolveRouteErrors(): void {
  for (
    let next = pendingRouteErrors.shift();
    next !== undefined;
    next = pendingRouteErrors.shift()
  ) {
    next();
  }
}

/** `X-Fencing-Token`: the grant's token, required on every fenced write. */
export const ApiFencingTokenHeader = () =>
  ApiHeader({
    name: 'X-Fencing-Token',
    required: true,
    description:
      'The fencing token of the grant this write acts under; a bad one is 400 INVALID_TOKEN',
    schema: int64Text('fencing token'),
  });

/** `X-Owner-Id`: the worker acting; must be the token's subject (docs/security.md). */
export const ApiOwnerIdHeader = (required = true) =>
  ApiHeader({
    name: 'X-Owner-Id',
    required,
    description: 'The acting owner: the bearer token subject, or 403 FORBIDDEN',
    schema: { type: 'string', minLength: 1, maxLength: OWNER_ID_MAX_LENGTH, pattern: '^[ -~]+$' },
  });

/** `X-Idempotency-Key` (worker writes) or `Idempotency-Key` (the payouts API's creations). */
export const ApiIdempotencyKeyHeader = (name: 'X-Idempotency-Key' | 'Idempotency-Key') =>
  ApiHeader({
    name,
    required: true,
    description:
      'Stable per operation: a replay with the same body gets the first answer, ' +
      'a different body 422 IDEMPOTENCY_CONFLICT',
    schema: {
      type: 'string',
      minLength: 1,
      maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
      pattern: '^[!-~]+$',
    },
  });

/** `X-Operator`: who asked for an operator action (the floor raises). */
export const ApiOperatorHeader = () =>
  ApiHeader({
    name: 'X-Operator',
    required: true,
    description: 'The operator or service raising the floor, for the audit record',
    schema: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[ -~]+$' },
  });

/** The three headers of a fenced write (docs/contract.md, "Headers"). */
/** `X-Grant-Proof`: the lock-server's signature over the grant (docs/security.md, "Signed grants"). */
export const ApiGrantProofHeader = () =>
  ApiHeader({
    name: 'X-Grant-Proof',
    required: true,
    description:
      'The grant proof the lock-server returned with the grant (L4 grantProof); missing, ' +
      'forged or for another key, owner or token is 403 PROOF_REJECTED',
    schema: { type: 'string', maxLength: PROOF_BYTES_MAX },
  });

export const ApiFencedWriteHeaders = () =>
  applyDecorators(
    ApiFencingTokenHeader(),
    ApiGrantProofHeader(),
    ApiOwnerIdHeader(),
    ApiIdempotencyKeyHeader('X-Idempotency-Key'),
  );

export interface OpenApiOptions {
  /** The service's name (also the token audience). */
  name: string;
  /** False only for the rail stub, which asks nobody for a token. */
  authenticated: boolean;
  /** True for a service that publishes signing keys at JWKS_PATH (servePublicKeys). */
  publishesKeys?: boolean;
  /**
   * True for a service whose every route counts against the caller's budget
   * (IdentityThrottlingModule): 429 CONTENTION_EXCEEDED is documented on all
   * of them. The lock-server, which exempts some routes, declares its 429s per route.
   */
  rateLimited?: boolean;
}

/** Paths served outside Nest's controllers or open to probes (authentication.ts OPEN_PATHS). */
const OPEN_OPERATIONS: Record<string, { summary: string; contentType: string }> = {
  '/health/live': { summary: 'Liveness probe (Terminus)', contentType: 'application/json' },
  '/health/ready': { summary: 'Readiness probe (Terminus)', contentType: 'application/json' },
  '/metrics': {
    summary: 'Prometheus metrics',
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
  },
  [OPENAPI_PATH]: { summary: 'This document', contentType: 'application/json' },
  [JWKS_PATH]: {
    summary:
      'The public keys this service signs its proofs with (docs/security.md, "Signed grants")',
    contentType: 'application/json',
  },
};

const SHARED_PARAMETERS: ParameterObject[] = [
  {
    name: 'traceparent',
    in: 'header',
    required: false,
    description: 'W3C trace context; its trace id comes back as traceId and the trace-id header',
    schema: { type: 'string', pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
  },
  {
    name: REQUEST_DEADLINE_HEADER,
    in: 'header',
    required: false,
    description:
      'Milliseconds the caller will still wait; work that cannot finish in time is refused ' +
      'with a retry-safe 503 before any side effect (docs/contract.md, "Deadlines")',
    schema: { type: 'integer', minimum: 1, maximum: REQUEST_DEADLINE_MAX_MS },
  },
];

/** On an authenticated service's routes: the person a delegating caller acts for. */
const ACTING_FOR_PARAMETER: ParameterObject = {
  name: 'X-Acting-For',
  in: 'header',
  required: false,
  description:
    'A signed-in person’s JWT (audience console), forwarded by a caller the policy grants ' +
    'identity.act-for; the request is then that person’s, a bad token 401 UNAUTHENTICATED ' +
    '(docs/security.md, "Acting for a person")',
  schema: { type: 'string', maxLength: TOKEN_BYTES_MAX },
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

function operations(doc: OpenAPIObject): [string, OperationObject][] {
  const found: [string, OperationObject][] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op) found.push([path, op]);
    }
  }
  return found;
}

/** Adds `codes` to the envelope response at `status`, creating it when absent. */
function addSharedErrors(op: OperationObject, errors: ContractError[]): void {
  for (const [status, codes] of byStatus(errors)) {
    const existing = op.responses[String(status)] as ResponseObject | undefined;
    const declared = (existing?.content?.['application/json']?.schema as SchemaObject | undefined)
      ?.allOf?.[1] as SchemaObject | undefined;
    const declaredCodes = (declared?.properties?.code as SchemaObject | undefined)?.enum as
      ErrorCode[] | undefined;
    // A route that declared this status as something else (the rail stub's own answers) keeps it.
    if (existing !== undefined && declaredCodes === undefined) continue;
    const merged = [...new Set([...(declaredCodes ?? []), ...codes])].sort();
    op.responses[String(status)] = envelopeResponse(merged);
  }
}

function sharedErrors(authenticated: boolean, hasBody: boolean): ContractError[] {
  const errors: ContractError[] = ['VALIDATION_FAILED', 'INTERNAL'];
  if (hasBody) errors.push(['VALIDATION_FAILED', 413], ['VALIDATION_FAILED', 415]);
  if (authenticated) errors.push('UNAUTHENTICATED', 'FORBIDDEN', 'UNAVAILABLE');
  return errors;
}

function describeOpenOperation(path: string, op: OperationObject): void {
  const open = OPEN_OPERATIONS[path];
  op.summary = open.summary;
  op.security = [];
  const ok: ResponseObject = {
    description: 'OK',
    content: {
      [open.contentType]: {
        schema: { type: open.contentType.startsWith('text') ? 'string' : 'object' },
      },
    },
  };
  op.responses =
    path === '/health/ready'
      ? { '200': ok, '503': envelopeResponse(['UNAVAILABLE']) }
      : { '200': ok };
}

/** Every `$ref` under `node`, in document order. */
function refsIn(node: unknown, into: Set<string>): Set<string> {
  const stack = [node];
  while (stack.length > 0) {
    const next = stack.pop();
    if (Array.isArray(next)) stack.push(...next);
    else if (typeof next === 'object' && next !== null) {
      for (const [k, v] of Object.entries(next)) {
        if (k === '$ref' && typeof v === 'string') into.add(v);
        else stack.push(v);
      }
    }
  }
  return into;
}

/** Adds the named wire schemas the document references (and those they reference). */
function addNamedSchemas(doc: OpenAPIObject): void {
  const schemas = (doc.components ??= {}).schemas ?? {};
  doc.components.schemas = schemas;
  const prefix = '#/components/schemas/';
  for (let added = true; added;) {
    added = false;
    for (const ref of refsIn(doc, new Set())) {
      const name = ref.slice(prefix.length);
      if (schemas[name] === undefined && NAMED_SCHEMAS.has(name)) {
        schemas[name] = NAMED_SCHEMAS.get(name)!;
        added = true;
      }
    }
  }
}

/**
 * The envelope's `code` enum: the codes every service knows and those this document's routes
 * declare, sorted. Built from the document, not from what the process registered, so a service's
 * document is the same whether it is built alone or beside other apps (npm run openapi).
 */
function listDeclaredCodes(doc: OpenAPIObject): void {
  const schemas = doc.components?.schemas ?? {};
  const envelope = schemas.ErrorEnvelope as SchemaObject | undefined;
  if (envelope === undefined) return;
  const codes = new Set<string>(Object.keys(BUILT_IN_ERROR_CODES));
  for (const [, op] of operations(doc)) {
    for (const response of Object.values(op.responses ?? {})) {
      const schema = (response as ResponseObject).content?.['application/json']?.schema as
        SchemaObject | undefined;
      const declared = (schema?.allOf?.[1] as SchemaObject | undefined)?.properties?.code as
        SchemaObject | undefined;
      for (const code of (declared?.enum ?? []) as string[]) codes.add(code);
    }
  }
  const code = envelope.properties?.code as SchemaObject;
  schemas.ErrorEnvelope = {
    ...envelope,
    properties: { ...envelope.properties, code: { ...code, enum: [...codes].sort() } },
  };
}

/** A deep copy with object keys sorted, so the document's bytes depend on content only. */
export function sortedKeys<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value, (_k, v: unknown) =>
      typeof v === 'object' && v !== null && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
    ),
  ) as T;
}

/** The service's document, built from its controllers' metadata; deterministic. */
export function buildOpenApiDocument(
  app: INestApplication,
  options: OpenApiOptions,
): OpenAPIObject {
  resolveRouteErrors();
  const doc = SwaggerModule.createDocument(
    app,
    {
      openapi: '3.0.3',
      info: {
        title: options.name,
        version: '1',
        description: `The HTTP surface of ${options.name}; wire conventions in docs/contract.md.`,
      },
      components: options.authenticated
        ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } }
        : {},
      security: options.authenticated ? [{ bearer: [] }] : [],
    },
    {
      operationIdFactory: (controller, method) =>
        `${controller.replace(/Controller$/, '')}_${method}`,
    },
  );
  doc.paths[OPENAPI_PATH] = { get: { operationId: 'OpenApi_document', responses: {} } };
  if (options.publishesKeys) {
    doc.paths[JWKS_PATH] = { get: { operationId: 'PublicKeys_jwks', responses: {} } };
  }
  for (const [path, op] of operations(doc)) {
    if (OPEN_OPERATIONS[path]) {
      describeOpenOperation(path, op);
      continue;
    }
    op.parameters = [
      ...(op.parameters ?? []),
      ...SHARED_PARAMETERS,
      ...(options.authenticated ? [ACTING_FOR_PARAMETER] : []),
    ];
    const errors = sharedErrors(options.authenticated, op.requestBody !== undefined);
    if (options.rateLimited) errors.push('CONTENTION_EXCEEDED');
    addSharedErrors(op, errors);
  }
  addNamedSchemas(doc);
  listDeclaredCodes(doc);
  return sortedKeys(doc);
}

/**
 * Serves the document at `GET /openapi.json` (open, like /health), built on its first request and
 * kept: most processes are never asked for it, and building it at start cost a few percent of a
 * service's start-up CPU (docs/contract.md).
 */
export function serveOpenApiDocument(app: INestApplication, options: OpenApiOptions): void {
  resolveRouteErrors();
  let doc: string | undefined;
  app.getHttpAdapter().get(OPENAPI_PATH, (_req: Request, res: Response) => {
    doc ??= JSON.stringify(buildOpenApiDocument(app, options));
    res.status(200).type('application/json; charset=utf-8').send(doc);
  });
}

/**
 * Serves the public half of a service's signing keys at `GET JWKS_PATH`
 * (open: public keys grant nothing), read on every request so a rotation
 * shows at once (docs/security.md, "Signed grants").
 */
export function servePublicKeys(app: INestApplication, jwks: () => object): void {
  app
    .getHttpAdapter()
    .get(JWKS_PATH, (_req: Request, res: Response) =>
      res.status(200).type('application/json; charset=utf-8').send(JSON.stringify(jwks())),
    );
}

/** The `limit` of an advisory list read (READ_LIMIT: 1..500, 100 when absent). */
export const ApiReadLimitQuery = () =>
  ApiQuery({
    name: 'limit',
    required: false,
    schema: {
      type: 'integer',
      minimum: READ_LIMIT.min,
      maximum: READ_LIMIT.max,
      default: READ_LIMIT.default,
    },
  });
