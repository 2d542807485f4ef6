import type { FencingToken } from '@dlock/lock-api';

/** A force-revoke asked for by one operator, waiting for a second (docs/security.md). */
export interface RevocationRequest {
  requestId: string;
  key: string;
  /** The body's `operator` and `reason`: what the revocation record will carry. */
  operator: string;
  reason: string;
  expectedToken?: FencingToken;
  /** The authenticated identity that asked. */
  requestedBy: string;
  requestedAt: Date;
  expiresAt: Date;
}

/** Why an approval was refused: no such request, the requester itself, used already, too late. */
export type ApprovalRefusal = 'unknown' | 'self' | 'approved' | 'expired';

/** One L8 revocation as recorded by the backend (its audit record). */
export interface RevocationEntry {
  revocationId: string;
  key: string;
  revokedToken: FencingToken;
  newTokenFloor: FencingToken;
  operator: string;
  reason: string;
  revokedAt: Date;
}
