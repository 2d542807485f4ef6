import { createHash } from 'node:crypto';
import type { SubmissionRequest } from './submission.types';

/** Fingerprint of the body that idempotency compares: same scope, same body -> replay. */
export function requestHash(req: SubmissionRequest): string {
  const canonical = JSON.stringify([
    req.payoutId,
    req.accountId,
    req.amountMinor,
    req.currency,
    req.beneficiaryRef,
    req.clientRef,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}
