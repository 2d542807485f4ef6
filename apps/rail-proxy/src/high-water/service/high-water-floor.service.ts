import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { FencePointService } from '@dlock/lock-nest';
import type { FloorCommand } from '@dlock/payout-contract/fence-floor';
import { payoutLockKey, type HighWaterFloorResponse } from '@dlock/payout-contract';

/**
 * The per-account raise (`POST /v1/rail/high-water/{id}/floor`, the
 * reconciler's and an operator's): the generic fence point with the notice
 * held to this account's key, floor and revocation (docs/operations.md,
 * "Revocation fencing"; docs/security.md, "Revocation notices"). The check,
 * the raise's audit and every refusal's safety event are FencePointService's.
 */
@Injectable()
export class HighWaterFloorService {
  constructor(private readonly fencePoint: FencePointService) {}

  async raise(cmd: FloorCommand): Promise<HighWaterFloorResponse> {
    const out = await this.fencePoint.raise(
      { notice: cmd.notice, operator: cmd.operator, reason: cmd.reason },
      {
        key: payoutLockKey(cmd.accountId),
        floor: cmd.floor,
        revocationId: cmd.revocationId ?? undefined,
      },
    );
    // The account id was checked by the parse: the upsert always leaves a mark.
    assert.ok(out.after !== null, 'a high-water raise always leaves a mark');
    return {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      highestTokenBefore: out.before?.toString() ?? null,
      highestTokenAfter: out.after.toString(),
      raised: out.result === 'raised',
    };
  }
}
