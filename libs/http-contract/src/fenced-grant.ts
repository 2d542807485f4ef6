import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { FencingToken } from '@dlock/lock-api';
import { requestDeadline, type RequestDeadline } from './deadline';
import {
  fencingTokenHeader,
  grantProofHeader,
  idempotencyKeyHeader,
  ownerIdHeader,
} from './headers';
import { requestTraceId, type TracedRequest } from './trace';

/**
 * Everything a fenced write carries in its headers (docs/contract.md,
 * "Headers"), parsed once and handed to the handler explicitly: the token
 * never travels ambiently. The proof is verified by the service that guards
 * the write (docs/security.md, "Signed grants: proofs, not claims").
 */
export interface FencedGrantHeaders {
  token: FencingToken;
  /** X-Grant-Proof as sent. */
  proof: string | string[] | undefined;
  ownerId: string;
  idempotencyKey: string;
  /** For log lines: the per-payout routes run without the request logger context. */
  traceId: string;
  /** The caller's X-Request-Deadline-Ms, when sent. */
  deadline?: RequestDeadline;
}

/** The headers of a fenced write, in the order a bad one is reported: token, owner, key. */
export function fencedGrantHeaders(req: Request & TracedRequest): FencedGrantHeaders {
  return {
    token: fencingTokenHeader(req),
    proof: grantProofHeader(req),
    ownerId: ownerIdHeader(req, true) as string,
    idempotencyKey: idempotencyKeyHeader(req),
    traceId: requestTraceId(req),
    deadline: requestDeadline(req),
  };
}

/** Route parameter: one decorator for a fenced write's grant, like an `@Auth()` for identity. */
export const FencedGrant = createParamDecorator((_: unknown, ctx: ExecutionContext) =>
  fencedGrantHeaders(ctx.switchToHttp().getRequest<Request & TracedRequest>()),
);
