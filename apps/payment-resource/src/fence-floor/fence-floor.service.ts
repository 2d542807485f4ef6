import { Injectable, Logger } from '@nestjs/common';
import { Counter, register } from 'prom-client';
import { DataSource } from 'typeorm';
import { DlockError } from '@dlock/lock-api';
import { FenceFloorRepository } from './fence-floor.repository';

export interface FloorCommand {
  accountId: string;
  floor: bigint;
  operator: string;
  revocationId: string | null;
  reason: string | null;
}

function raisesCounter(): Counter {
  const name = 'fence_floor_raises_total';
  return (
    (register.getSingleMetric(name) as Counter | undefined) ??
    new Counter({
      name,
      help: 'Operator/reconciler fence-floor requests, by whether the fence moved',
      labelNames: ['result'],
    })
  );
}

/**
 * Raises an account's fence to a floor so that a revoked holder is fenced out
 * at once, before any new holder writes (docs/operations.md, "Revocation
 * fencing"). Every request is logged with its attribution; a raise that moved
 * the fence is the `fence_floor_raised` event.
 */
@Injectable()
export class FenceFloorService {
  private readonly logger = new Logger('fence-floor');
  private readonly raises = raisesCounter();

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FenceFloorRepository,
  ) {
    for (const result of ['raised', 'unchanged']) this.raises.inc({ result }, 0);
  }

  async raise(cmd: FloorCommand) {
    const out = await this.repo.raise(this.dataSource.manager, cmd.accountId, cmd.floor);
    if (out === null) {
      throw new DlockError('NOT_FOUND', 'no such account', {
        details: { accountId: cmd.accountId },
      });
    }
    this.raises.inc({ result: out.raised ? 'raised' : 'unchanged' });
    const fields = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      fenceBefore: out.fenceBefore.toString(),
      fenceAfter: out.fenceAfter.toString(),
      operator: cmd.operator,
      revocationId: cmd.revocationId,
      reason: cmd.reason,
    };
    if (out.raised) this.logger.warn({ event: 'fence_floor_raised', ...fields }, 'fence raised');
    else this.logger.log({ event: 'fence_floor_unchanged', ...fields }, 'fence already past floor');
    return {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      fenceBefore: out.fenceBefore.toString(),
      fenceAfter: out.fenceAfter.toString(),
      raised: out.raised,
    };
  }
}
