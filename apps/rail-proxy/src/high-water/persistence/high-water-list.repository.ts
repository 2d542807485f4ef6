import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { parseFencingToken } from '@dlock/lock-api';
import { sqlRows } from '@dlock/persistence';

export interface HighWaterMark {
  accountId: string;
  highestToken: bigint;
}

/** Read side of rail_high_water for the operator console; it never writes. */
@Injectable()
export class HighWaterListRepository {
  constructor(private readonly db: DataSource) {}

  /** Marks in byte order of account id (the order payment-resource lists its accounts in). */
  async list(limit: number): Promise<HighWaterMark[]> {
    const rows: { account_id: string; highest_token: string }[] = await sqlRows(
      this.db,
      `SELECT account_id, highest_token::text AS highest_token FROM rail_high_water
        ORDER BY account_id COLLATE "C" LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      accountId: r.account_id,
      highestToken: parseFencingToken(r.highest_token, 'highest_token'),
    }));
  }
}
