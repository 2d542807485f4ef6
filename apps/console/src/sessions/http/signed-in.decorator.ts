import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { UnauthenticatedError } from '@dlock/identity';
import type { ConsoleRequest } from './request.guard';
import type { ConsoleSession } from '../service/session-store.service';

/**
 * Route parameter: the session of the person at the keyboard. The session
 * gate has already refused every /api request without one (401); this only
 * makes the handler's dependency on it explicit.
 */
export const SignedIn = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): ConsoleSession => {
    const session = ctx.switchToHttp().getRequest<ConsoleRequest>().consoleSession;
    if (session === undefined) throw new UnauthenticatedError('sign in first');
    return session;
  },
);
