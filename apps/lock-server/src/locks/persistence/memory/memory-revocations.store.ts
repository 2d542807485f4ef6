import { RevocationLog, type RevocationEntry } from '../revocation-log.port';
import {
  RevocationRequests,
  type ApprovalRefusal,
  type RevocationRequest,
} from '../revocation-requests.port';
import type { MemoryLockState } from './memory-state.model';

/** The L8 audit records in floor order, as pg's lock_revocation reads them. */
export class MemoryRevocationLog extends RevocationLog {
  constructor(private readonly state: MemoryLockState) {
    super();
  }

  override async list(afterFloor: bigint, limit: number): Promise<RevocationEntry[]> {
    await this.state.step();
    return this.state.revocations
      .filter((r) => r.newTokenFloor > afterFloor)
      .sort((a, b) => (a.newTokenFloor < b.newTokenFloor ? -1 : 1))
      .slice(0, limit);
  }
}

/** Two-person revocation requests, with pg's approval rule (pg-revocation-requests.store.ts). */
export class MemoryRevocationRequests extends RevocationRequests {
  constructor(private readonly state: MemoryLockState) {
    super();
  }

  override async create(
    request: Omit<RevocationRequest, 'requestId' | 'requestedAt' | 'expiresAt'>,
    windowMs: number,
  ): Promise<RevocationRequest> {
    await this.state.step();
    const now = this.state.now();
    const created: RevocationRequest = {
      ...request,
      requestId: this.state.ports.newId(),
      requestedAt: new Date(now),
      expiresAt: new Date(now + windowMs),
    };
    this.state.requests.set(created.requestId, { ...created, approvedBy: null });
    return created;
  }

  override async approve(
    requestId: string,
    approver: string,
  ): Promise<RevocationRequest | ApprovalRefusal> {
    await this.state.step();
    const row = this.state.requests.get(requestId);
    if (!row) return 'unknown';
    if (row.requestedBy === approver) return 'self';
    if (row.approvedBy !== null) return 'approved';
    if (row.expiresAt.getTime() <= this.state.now()) return 'expired';
    row.approvedBy = approver;
    const { approvedBy: _approvedBy, ...request } = row;
    return request;
  }
}
