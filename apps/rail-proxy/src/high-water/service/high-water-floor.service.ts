import { Injectable } from '@nestjs/common';
import { FenceFloorAudit, type FloorCommand } from '@dlock/payout-contract/fence-floor';
import type { HighWaterFloorResponse } from '@dlock/payout-contract';
import { HighWaterFloorRepository } from '../persistence/high-water-floor.repository';

/**
 * Raises an account's high-water mark so a revoked holder's token is refused
 * before any new holder submits (docs/operations.md, "Revocation fencing").
 * Every request is audited with its attribution.
 */
@Injectable()
export class HighWaterFloorService {
  private readonly audit = new FenceFloorAudit('fence-floor');

  constructor(private readonly repo: HighWaterFloorRepository) {}

  async raise(cmd: FloorCommand): Promise<HighWaterFloorResponse> {
    const out = await this.repo.raise(cmd.accountId, cmd.floor);
    const view: HighWaterFloorResponse = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      highestTokenBefore: out.highestBefore?.toString() ?? null,
      highestTokenAfter: out.highestAfter.toString(),
      raised: out.raised,
    };
    this.audit.record(cmd, out.raised, {
      highestTokenBefore: view.highestTokenBefore,
      highestTokenAfter: view.highestTokenAfter,
    });
    return view;
  }
}
