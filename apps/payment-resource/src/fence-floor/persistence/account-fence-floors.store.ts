import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { FenceFloors, type FenceFloorRaise } from '@dlock/lock-nest';
import { isAccountId, PAYOUT_LOCK_KEY_PREFIX } from '@dlock/payout-contract';
import { FenceFloorRepository } from './fence-floor.repository';

const NOTHING: FenceFloorRaise = { result: 'not_found', before: null, after: null };

/**
 * The account fence as this fence point's memory of `payout:{accountId}`
 * (docs/security.md, "Revocation notices"): the column every payout write
 * of the account is checked against, raised by FenceFloorRepository's one
 * statement. A key that names no account has nothing to fence.
 */
@Injectable()
export class AccountFenceFloors extends FenceFloors {
  readonly prefix = PAYOUT_LOCK_KEY_PREFIX;

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FenceFloorRepository,
  ) {
    super();
  }

  async raise(accountId: string, floor: bigint): Promise<FenceFloorRaise> {
    if (!isAccountId(accountId)) return NOTHING;
    const out = await this.repo.raise(this.dataSource.manager, accountId, floor);
    if (out === null) return NOTHING;
    return {
      result: out.raised ? 'raised' : 'unchanged',
      before: out.fenceBefore,
      after: out.fenceAfter,
    };
  }
}
