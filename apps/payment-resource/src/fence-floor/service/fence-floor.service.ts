import { Injectable } from '@nestjs/common';
import { DlockError } from '@dlock/lock-api';
import { FencePointService } from '@dlock/lock-nest';
import type { FloorCommand } from '@dlock/payout-contract/fence-floor';
import { payoutLockKey, type AccountFloorResponse } from '@dlock/payout-contract';

/**
 * The per-account raise (`POST /v1/accounts/{id}/fence-floor`, the reconciler's
 * and an operator's): the generic fence point with the notice held to this
 * account's key, floor and revocation, so the two routes cannot drift apart
 * (docs/operations.md, "Revocation fencing"; docs/security.md, "Revocation
 * notices"). The check, the raise's audit and every refusal's safety event are
 * FencePointService's.
 */
@Injectable()
export class FenceFloorService {
  constructor(private readonly fencePoint: FencePointService) {}

  async raise(cmd: FloorCommand): Promise<AccountFloorResponse> {
    const out = await this.fencePoint.raise(
      { notice: cmd.notice, operator: cmd.operator, reason: cmd.reason },
      {
        key: payoutLockKey(cmd.accountId),
        floor: cmd.floor,
        revocationId: cmd.revocationId ?? undefined,
      },
    );
    if (out.result === 'not_found' || out.before === null || out.after === null) {
      throw new DlockError('NOT_FOUND', 'no such account', {
        details: { accountId: cmd.accountId },
      });
    }
    return {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      fenceBefore: out.before.toString(),
      fenceAfter: out.after.toString(),
      raised: out.result === 'raised',
    };
  }
}
