import {
  Logger,
  SetMetadata,
  type CanActivate,
  type CustomDecorator,
  type ExecutionContext,
} from '@nestjs/common';
import type { Request } from 'express';
import { ForbiddenError, type AuthPolicy, type OperationName } from '@dlock/identity';
import {
  OPEN_PATHS,
  recordAuthRefusal,
  requestIdentity,
  type AuthenticatedRequest,
} from './authentication';

export const OPERATION_METADATA = 'dlock:operation';

export interface OperationMetadata {
  name: OperationName;
  /** The route parameter holding the lock key the policy's `lockKeys` are matched against. */
  lockKeyParam?: string;
}

/**
 * Names what a route does, for the authorisation policy (docs/security.md).
 * Every route carries one: a route without it is refused to everyone.
 */
export function Operation(
  name: OperationName,
  opts: { lockKeyParam?: string } = {},
): CustomDecorator<string> {
  const meta: OperationMetadata = { name, ...opts };
  return SetMetadata(OPERATION_METADATA, meta);
}

export function operationOf(handler: object): OperationMetadata | undefined {
  return Reflect.getMetadata(OPERATION_METADATA, handler) as OperationMetadata | undefined;
}

/**
 * The one authorisation gate (installed by applyHttpContract next to the
 * authentication middleware): may this identity call this route's operation,
 * on this key? A refusal is 403 FORBIDDEN before any pipe, interceptor or
 * handler runs, so it changes nothing; it is the `auth_refused` safety event
 * with `refusal="policy"`.
 */
export class OperationGuard implements CanActivate {
  private readonly logger = new Logger('auth');

  constructor(private readonly policy: AuthPolicy) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest & Request>();
    // Probes and scrapers carry no identity (the same paths authentication lets through).
    if (OPEN_PATHS.has(req.path)) return true;
    const identity = requestIdentity(req);
    const operation = operationOf(context.getHandler());
    const decision = operation
      ? this.policy.decide(identity.subject, operation.name, lockKeyOf(req, operation))
      : { allowed: false as const, reason: 'route names no operation' };
    if (decision.allowed) return true;
    const err = new ForbiddenError(`not allowed by the authorisation policy: ${decision.reason}`, {
      reason: 'policy',
      ...(operation ? { operation: operation.name } : {}),
    });
    recordAuthRefusal(this.logger, req, err, identity.subject, 'policy');
    throw err;
  }
}

function lockKeyOf(req: Request, operation: OperationMetadata): string | undefined {
  if (operation.lockKeyParam === undefined) return undefined;
  const raw: unknown = req.params[operation.lockKeyParam];
  return typeof raw === 'string' ? raw : undefined;
}
