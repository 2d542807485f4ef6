import { Injectable } from '@nestjs/common';
import { formatFencingToken } from '@dlock/lock-api';
import type { HighWaterList } from '@dlock/payout-contract';
import { HighWaterListRepository } from '../persistence/high-water-list.repository';

/** The console's read of every account's durable high-water mark (docs/rail.md, "Console reads"). */
@Injectable()
export class HighWaterListService {
  constructor(private readonly marks: HighWaterListRepository) {}

  /** The first `limit` marks in account order, and whether more exist. */
  async list(limit: number): Promise<HighWaterList> {
    const rows = await this.marks.list(limit + 1);
    return {
      accounts: rows.slice(0, limit).map((m) => ({
        accountId: m.accountId,
        highWater: formatFencingToken(m.highestToken),
      })),
      truncated: rows.length > limit,
    };
  }
}
