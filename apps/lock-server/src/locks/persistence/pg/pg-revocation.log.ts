import { RevocationLog, type RevocationEntry } from '../revocation-log.port';
import type { PgDatabase } from './pg.gateway';
import { tokenFromDb } from './pg-rows.codec';

/**
 * lock_revocation in floor order. A floor is a nextval taken inside the
 * revoke statement, so a revocation can commit after one with a higher floor
 * was read: readers re-read recent ones (docs/reconciler.md). The order is
 * the table's bigint column's: the selected text of the same name sorts '10'
 * before '9'.
 */
const LIST_REVOCATIONS_SQL = `
SELECT revocation_id::text AS revocation_id, lock_key, revoked_token::text AS revoked_token,
       new_token_floor::text AS new_token_floor, operator, reason, revoked_at
FROM lock_revocation WHERE new_token_floor > $1::bigint
ORDER BY lock_revocation.new_token_floor LIMIT $2::int`;

interface RevocationRow {
  revocation_id: string;
  lock_key: string;
  revoked_token: string;
  new_token_floor: string;
  operator: string;
  reason: string;
  revoked_at: Date;
}

export class PgRevocationLog extends RevocationLog {
  constructor(private readonly db: PgDatabase) {
    super();
  }

  override async list(afterFloor: bigint, limit: number): Promise<RevocationEntry[]> {
    const rows = await this.db.rows<RevocationRow>(LIST_REVOCATIONS_SQL, [
      afterFloor.toString(),
      limit,
    ]);
    return rows.map((r) => ({
      revocationId: r.revocation_id,
      key: r.lock_key,
      revokedToken: tokenFromDb(r.revoked_token),
      newTokenFloor: tokenFromDb(r.new_token_floor),
      operator: r.operator,
      reason: r.reason,
      revokedAt: r.revoked_at,
    }));
  }
}
