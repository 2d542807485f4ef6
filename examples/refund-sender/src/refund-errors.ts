import { registerErrorCodes } from '@dlock/lock-api';

/**
 * The example's own error code (docs/extending.md, "Your own error codes and safety events"):
 * the refund was left SENDING by an earlier grant, so whether its money moved is unknown.
 * 409 and not retry-safe: sending again could pay twice; someone checks the payment network
 * first. Registered when the module loads (refund-sender.module.ts), before any request.
 */
export const REFUND_ERROR_CODES = {
  REFUND_NEEDS_CHECK: { httpStatus: 409, retrySafe: false },
} as const;

export function registerRefundErrorCodes(): void {
  registerErrorCodes(REFUND_ERROR_CODES);
}

// So that a misspelt code does not compile: the type checker's list names it too.
declare module '@dlock/lock-api' {
  interface RegisteredErrorCodes {
    REFUND_NEEDS_CHECK: true;
  }
}
