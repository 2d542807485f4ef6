import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import {
  DlockError,
  OWNER_ID_MAX_LENGTH,
  ValidationError,
  parseFencingToken,
  type FencingToken,
} from '@dlock/lock-api';
import { requestTraceId, type TracedRequest } from './trace';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 128;
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]+$/;

function single(req: Request, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Headers a request may carry once. Node keeps only the first Authorization
 * (and Content-Type) and joins repeated X- headers with ", ", so a repeat is
 * seen only in `rawHeaders`: one is refused before anything reads it
 * (docs/security.md, "Hardening").
 */
const SINGULAR_HEADERS = new Set<string>([
  'authorization',
  'content-type',
  'idempotency-key',
  'x-acting-for',
  'x-csrf-token',
  'x-fencing-token',
  'x-goog-iap-jwt-assertion',
  'x-grant-proof',
  'x-idempotency-key',
  'x-operator',
  'x-owner-id',
  'x-request-deadline-ms',
]);

/**
 * Adds an app's own headers to those a request may carry once (a signed object it reads, say);
 * registered when the app's module loads, like its operations (docs/extending.md).
 */
export function registerSingularHeaders(names: readonly string[]): void {
  for (const name of names) SINGULAR_HEADERS.add(name.toLowerCase());
}

/** 400 VALIDATION_FAILED naming the first header of SINGULAR_HEADERS sent more than once. */
export function refuseRepeatedHeaders(rawHeaders: readonly string[]): void {
  let seen: Set<string> | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (!SINGULAR_HEADERS.has(name)) continue;
    seen ??= new Set();
    if (seen.has(name)) {
      throw new ValidationError([{ field: rawHeaders[i], message: 'header sent more than once' }]);
    }
    seen.add(name);
  }
}

/** Media types a request body may have: JSON, with or without parameters (a charset). */
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

/**
 * A request that carries a body must say it is JSON: any other Content-Type
 * (or none) is 415 VALIDATION_FAILED before a byte is read. A request
 * without a body passes, whatever it says (docs/contract.md, "Bodies and numbers").
 */
export function refuseNonJsonBody(req: Request): void {
  const length = req.headers['content-length'];
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  const type = req.headers['content-type'];
  if (!hasBody || (type !== undefined && JSON_MEDIA_TYPE.test(type))) return;
  throw new DlockError(
    'VALIDATION_FAILED',
    `unsupported request body type (${type ?? 'none'}): send application/json`,
    {
      httpStatus: 415,
      details: { fields: [{ field: 'Content-Type', message: 'must be application/json' }] },
    },
  );
}

/** `X-Fencing-Token`: required, strict int64 > 0, else 400 INVALID_TOKEN. */
export function fencingTokenHeader(req: Request): FencingToken {
  const raw = req.headers['x-fencing-token'];
  if (Array.isArray(raw)) return parseFencingToken(raw.length === 1 ? raw[0] : undefined);
  return parseFencingToken(raw);
}

/** `X-Owner-Id`: opaque worker identity, 1..64 printable characters (FR-30). */
export function ownerIdHeader(req: Request, required = true): string | undefined {
  const value = single(req, 'x-owner-id');
  if (value === undefined || value === '') {
    if (!required) return undefined;
    throw new ValidationError([{ field: 'X-Owner-Id', message: 'header is required' }]);
  }
  if (value.length > OWNER_ID_MAX_LENGTH || !/^[\x20-\x7e]+$/.test(value)) {
    throw new ValidationError([
      {
        field: 'X-Owner-Id',
        message: `must be 1..${OWNER_ID_MAX_LENGTH} printable ASCII characters`,
      },
    ]);
  }
  return value;
}

/**
 * `X-Idempotency-Key`: required on claim, post and rail submissions; stable per
 * payout. The payouts API's creating requests take the industry's
 * `Idempotency-Key` instead (docs/payment-resource.md), with the same rules.
 */
export function idempotencyKeyHeader(req: Request, name = 'X-Idempotency-Key'): string {
  const value = single(req, name);
  if (value === undefined || value === '') {
    throw new ValidationError([{ field: name, message: 'header is required' }]);
  }
  if (value.length > IDEMPOTENCY_KEY_MAX_LENGTH || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
    throw new ValidationError([
      {
        field: name,
        message: `must be 1..${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters`,
      },
    ]);
  }
  return value;
}

/**
 * `X-Grant-Proof`, as sent: verified by the service that guards the write
 * (docs/security.md, "Signed grants"); a missing or repeated one is refused there.
 */
export function grantProofHeader(req: Request): string | string[] | undefined {
  return req.headers['x-grant-proof'];
}

/** Parameter decorators: the token is handed to the handler explicitly, never stored ambiently. */
export const FencingTokenParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  fencingTokenHeader(ctx.switchToHttp().getRequest<Request>()),
);
export const GrantProofParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  grantProofHeader(ctx.switchToHttp().getRequest<Request>()),
);
export const OwnerIdParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  ownerIdHeader(ctx.switchToHttp().getRequest<Request>(), true),
);
export const IdempotencyKeyParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  idempotencyKeyHeader(ctx.switchToHttp().getRequest<Request>()),
);
/** `Idempotency-Key` on the payouts API's creating requests. */
export const ClientIdempotencyKeyParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  idempotencyKeyHeader(ctx.switchToHttp().getRequest<Request>(), 'Idempotency-Key'),
);
/** The request's trace id, for log lines on routes served without the request logger context. */
export const TraceIdParam = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  requestTraceId(ctx.switchToHttp().getRequest<TracedRequest>()),
);
