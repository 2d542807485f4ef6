import type { ApprovalRefusal, RevocationRequest } from '../domain/revocation.types';

export type { ApprovalRefusal, RevocationRequest };

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
