import { randomUUID } from 'node:crypto';
import { formatFencingToken, parseFencingToken } from '@dlock/lock-api';
import {
  RevocationRequests,
  type ApprovalRefusal,
  type RevocationRequest,
} from '../revocation-requests.port';
import { get, modRevisionIs, put, rangeAt, type EtcdGateway } from './etcd.gateway';

/** `revocation-request/<id>`: no lease, kept like the revocation records (docs/lock-server-etcd.md). */
interface RequestRecord {
  key: string;
  operator: string;
  reason: string;
  expectedToken?: string;
  requestedBy: string;
  requestedAtMs: number;
  expiresAtMs: number;
  approvedBy?: string;
  approvedAtMs?: number;
}

function toRequest(requestId: string, r: RequestRecord): RevocationRequest {
  return {
    requestId,
    key: r.key,
    operator: r.operator,
    reason: r.reason,
    expectedToken:
      r.expectedToken === undefined
        ? undefined
        : parseFencingToken(r.expectedToken, 'expectedToken'),
    requestedBy: r.requestedBy,
    requestedAt: new Date(r.requestedAtMs),
    expiresAt: new Date(r.expiresAtMs),
  };
}

/** The etcd backend's two-person revocations, next to its revocation records. */
export class EtcdRevocationRequests extends RevocationRequests {
  constructor(private readonly gw: EtcdGateway) {
    super();
  }

  override async create(
    request: Omit<RevocationRequest, 'requestId' | 'requestedAt' | 'expiresAt'>,
    windowMs: number,
  ): Promise<RevocationRequest> {
    const requestId = randomUUID();
    const now = Date.now();
    const record: RequestRecord = {
      key: request.key,
      operator: request.operator,
      reason: request.reason,
      requestedBy: request.requestedBy,
      requestedAtMs: now,
      expiresAtMs: now + windowMs,
      ...(request.expectedToken === undefined
        ? {}
        : { expectedToken: formatFencingToken(request.expectedToken) }),
    };
    const value = Buffer.from(JSON.stringify(record));
    await this.gw.txn(
      [],
      [put(this.gw.keys.revocationRequest(requestId), value)],
      [],
      this.gw.deadline(),
    );
    return toRequest(requestId, record);
  }

  override async approve(
    requestId: string,
    approver: string,
  ): Promise<RevocationRequest | ApprovalRefusal> {
    const key = this.gw.keys.revocationRequest(requestId);
    const deadline = this.gw.deadline();
    const [kv] = rangeAt(await this.gw.read([get(key)], deadline), 0);
    if (!kv) return 'unknown';
    const record = JSON.parse(kv.value.toString()) as RequestRecord;
    if (record.requestedBy === approver) return 'self';
    if (record.approvedBy !== undefined) return 'approved';
    const now = Date.now();
    if (record.expiresAtMs <= now) return 'expired';
    const approved: RequestRecord = { ...record, approvedBy: approver, approvedAtMs: now };
    // Compared on the revision read: of two approvals at once, one writes.
    const res = await this.gw.txn(
      [modRevisionIs(key, BigInt(kv.mod_revision))],
      [put(key, Buffer.from(JSON.stringify(approved)))],
      [],
      deadline,
    );
    return res.succeeded ? toRequest(requestId, record) : 'approved';
  }
}
