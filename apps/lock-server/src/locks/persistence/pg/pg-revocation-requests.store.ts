import { formatFencingToken } from '@dlock/lock-api';
import {
  RevocationRequests,
  type ApprovalRefusal,
  type RevocationRequest,
} from '../revocation-requests.port';
import type { PgDatabase } from './pg.gateway';
import { tokenFromDb } from './pg-rows.codec';

const COLUMNS = `request_id::text AS request_id, lock_key, expected_token::text AS expected_token,
  operator, reason, requested_by, requested_at, expires_at`;

const CREATE_SQL = `
INSERT INTO lock_revocation_request
  (request_id, lock_key, expected_token, operator, reason, requested_by, expires_at)
VALUES (gen_random_uuid(), $1, $2::bigint, $3, $4, $5,
        clock_timestamp() + make_interval(secs => $6::double precision / 1000))
RETURNING ${COLUMNS}`;

/** The approval: only a pending request, by someone else, inside its window. */
const APPROVE_SQL = `
UPDATE lock_revocation_request
SET approved_by = $2, approved_at = clock_timestamp()
WHERE request_id = $1::uuid AND approved_by IS NULL AND requested_by <> $2
  AND expires_at > clock_timestamp()
RETURNING ${COLUMNS}`;

const WHY_NOT_SQL = `
SELECT requested_by, approved_by, expires_at <= clock_timestamp() AS expired
FROM lock_revocation_request WHERE request_id = $1::uuid`;

interface RequestRow {
  request_id: string;
  lock_key: string;
  expected_token: string | null;
  operator: string;
  reason: string;
  requested_by: string;
  requested_at: Date;
  expires_at: Date;
}

function toRequest(row: RequestRow): RevocationRequest {
  return {
    requestId: row.request_id,
    key: row.lock_key,
    operator: row.operator,
    reason: row.reason,
    expectedToken: row.expected_token === null ? undefined : tokenFromDb(row.expected_token),
    requestedBy: row.requested_by,
    requestedAt: row.requested_at,
    expiresAt: row.expires_at,
  };
}

/** lock_revocation_request in lockdb (migration RevocationRequests). */
export class PgRevocationRequests extends RevocationRequests {
  constructor(private readonly db: PgDatabase) {
    super();
  }

  override async create(
    request: Omit<RevocationRequest, 'requestId' | 'requestedAt' | 'expiresAt'>,
    windowMs: number,
  ): Promise<RevocationRequest> {
    const [row] = await this.db.rows<RequestRow>(CREATE_SQL, [
      request.key,
      request.expectedToken === undefined ? null : formatFencingToken(request.expectedToken),
      request.operator,
      request.reason,
      request.requestedBy,
      windowMs,
    ]);
    return toRequest(row);
  }

  override async approve(
    requestId: string,
    approver: string,
  ): Promise<RevocationRequest | ApprovalRefusal> {
    const [row] = await this.db.rows<RequestRow>(APPROVE_SQL, [requestId, approver]);
    if (row) return toRequest(row);
    const [why] = await this.db.rows<{
      requested_by: string;
      approved_by: string | null;
      expired: boolean;
    }>(WHY_NOT_SQL, [requestId]);
    if (!why) return 'unknown';
    if (why.requested_by === approver) return 'self';
    if (why.approved_by !== null) return 'approved';
    return 'expired';
  }
}
