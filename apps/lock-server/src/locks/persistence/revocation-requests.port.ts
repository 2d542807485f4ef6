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

/**
 * The pending two-person revocations and their approvals, kept where the
 * backend keeps its revocation records (lockdb for pg, etcd for etcd), so every
 * replica sees them and both calls stay on record.
 */
export abstract class RevocationRequests {
  abstract create(
    request: Omit<RevocationRequest, 'requestId' | 'requestedAt' | 'expiresAt'>,
    windowMs: number,
  ): Promise<RevocationRequest>;

  /**
   * Records `approver`'s approval if the request is pending, was made by
   * someone else and its window is open (one conditional write); otherwise
   * says why not and changes nothing.
   */
  abstract approve(
    requestId: string,
    approver: string,
  ): Promise<RevocationRequest | ApprovalRefusal>;
}
