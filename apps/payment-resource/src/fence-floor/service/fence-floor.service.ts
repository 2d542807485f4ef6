import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DlockError } from '@dlock/lock-api';
import { FenceFloorAudit, type FloorCommand } from '@dlock/payout-contract/fence-floor';
import type { AccountFloorResponse } from '@dlock/payout-contract';
import { FenceFloorRepository } from '../persistence/fence-floor.repository';

/**
 * Raises an account's fence to a floor so that a revoked holder is fenced out
 * at once, before any new holder writes (docs/operations.md, "Revocation
 * fencing"). Every request is audited with its attribution.
 */
@Injectable()
export class FenceFloorService {
  private readonly audit = new FenceFloorAudit('fence-floor');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FenceFloorRepository,
  ) {}

  async raise(cmd: FloorCommand): Promise<AccountFloorResponse> {
    const out = await this.repo.raise(this.dataSource.manager, cmd.accountId, cmd.floor);
    if (out === null) {
      throw new DlockError('NOT_FOUND', 'no such account', {
        details: { accountId: cmd.accountId },
      });
    }
    const view: AccountFloorResponse = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      fenceBefore: out.fenceBefore.toString(),
      fenceAfter: out.fenceAfter.toString(),
      raised: out.raised,
    };
    this.audit.record(cmd, out.raised, {
      fenceBefore: view.fenceBefore,
      fenceAfter: view.fenceAfter,
    });
    return view;
  }
}
