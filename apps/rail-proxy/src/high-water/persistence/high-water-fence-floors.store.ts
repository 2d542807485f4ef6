import { Injectable } from '@nestjs/common';
import { FenceFloors, type FenceFloorRaise } from '@dlock/lock-nest';
import { isAccountId, PAYOUT_LOCK_KEY_PREFIX } from '@dlock/payout-contract';
import { HighWaterFloorRepository } from './high-water-floor.repository';

/**
 * The rail high-water mark as this fence point's memory of
 * `payout:{accountId}` (fence point (c), docs/rail.md): the mark every
 * submission is admitted against, raised by HighWaterFloorRepository's one
 * upsert. `before` is null when the proxy had no mark for the account yet.
 */
@Injectable()
export class HighWaterFenceFloors extends FenceFloors {
  readonly prefix = PAYOUT_LOCK_KEY_PREFIX;

  constructor(private readonly repo: HighWaterFloorRepository) {
    super();
  }

  async raise(accountId: string, floor: bigint): Promise<FenceFloorRaise> {
    if (!isAccountId(accountId)) return { result: 'not_found', before: null, after: null };
    const out = await this.repo.raise(accountId, floor);
    return {
      result: out.raised ? 'raised' : 'unchanged',
      before: out.highestBefore,
      after: out.highestAfter,
    };
  }
}
