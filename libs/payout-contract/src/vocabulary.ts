import { registerOperations } from '@dlock/identity';
import { registerErrorCodes } from '@dlock/lock-api';
import { PAYOUT_ERROR_CODES } from './error-codes';
import { PAYOUT_OPERATIONS } from './operations';

/**
 * What the payout services add to the generic libraries (CONTRIBUTING.md, "What a library may
 * import"): their policy operations and their error codes. Every app that serves or calls a payout service calls this when its module loads,
 * before it serves; the lock-server never does. Safety events, audit chains and the instruction
 * header are registered by the apps that emit, verify or read them (PAYOUT_SAFETY_EVENTS,
 * PAYOUT_AUDIT_CHAINS, PAYOUT_INSTRUCTION_HEADER). Nothing here loads Nest.
 */
export function registerPayoutVocabulary(): void {
  registerOperations(PAYOUT_OPERATIONS);
  registerErrorCodes(PAYOUT_ERROR_CODES);
}
