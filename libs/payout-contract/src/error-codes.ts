import type { ErrorCatalogue } from '@dlock/lock-api';

/**
 * The payout services' error codes (docs/contract.md, "Error catalogue"). Every app that
 * answers or reads them registers them with `registerErrorCodes` of @dlock/lock-api when its
 * module loads (`registerPayoutVocabulary`); the lock-server knows none of them.
 */
export const PAYOUT_ERROR_CODES = {
  PAYOUT_NOT_CLAIMABLE: { httpStatus: 409, retrySafe: false },
  DUPLICATE_SUBMISSION: { httpStatus: 409, retrySafe: false },
  INSUFFICIENT_FUNDS: { httpStatus: 422, retrySafe: false },
  RAIL_UNAVAILABLE: { httpStatus: 503, retrySafe: true },
  RAIL_AMBIGUOUS: { httpStatus: 409, retrySafe: false },
} as const satisfies ErrorCatalogue;

declare module '@dlock/lock-api' {
  interface RegisteredErrorCodes {
    PAYOUT_NOT_CLAIMABLE: true;
    DUPLICATE_SUBMISSION: true;
    INSUFFICIENT_FUNDS: true;
    RAIL_UNAVAILABLE: true;
    RAIL_AMBIGUOUS: true;
  }
}
