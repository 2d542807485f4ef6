import { DlockError } from '@dlock/lock-api';

/** 401: no token, or one that does not verify (docs/security.md). Nothing was done. */
export class UnauthenticatedError extends DlockError {
  constructor(message: string) {
    super('UNAUTHENTICATED', message);
  }
}

/** 403: a verified identity asked for something it may not do. Nothing was done. */
export class ForbiddenError extends DlockError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('FORBIDDEN', message, { details });
  }
}
