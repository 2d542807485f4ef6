import { Injectable, Logger } from '@nestjs/common';
import { Counter, register } from 'prom-client';
import { HighWaterFloorRepository } from './high-water-floor.repository';

export interface MarkFloorCommand {
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
      help: 'Operator/reconciler high-water floor requests, by whether the mark moved',
      labelNames: ['result'],
    })
  );
}

/**
 * Raises an account's high-water mark so a revoked holder's token is refused
 * before any new holder submits (docs/operations.md, "Revocation fencing").
 * Every request is logged with its attribution; a raise that moved the mark
 * is the `fence_floor_raised` event.
 */
@Injectable()
export class HighWaterFloorService {
  private readonly logger = new Logger('fence-floor');
  private readonly raises = raisesCounter();

  constructor(private readonly repo: HighWaterFloorRepository) {
    for (const result of ['raised', 'unchanged']) this.raises.inc({ result }, 0);
  }

  async raise(cmd: MarkFloorCommand) {
    const out = await this.repo.raise(cmd.accountId, cmd.floor);
    this.raises.inc({ result: out.raised ? 'raised' : 'unchanged' });
    const view = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      highestTokenBefore: out.highestBefore?.toString() ?? null,
      highestTokenAfter: out.highestAfter.toString(),
      raised: out.raised,
    };
    const audit = {
      ...view,
      operator: cmd.operator,
      revocationId: cmd.revocationId,
      reason: cmd.reason,
    };
    if (out.raised) this.logger.warn({ event: 'fence_floor_raised', ...audit }, 'mark raised');
    else this.logger.log({ event: 'fence_floor_unchanged', ...audit }, 'mark already past floor');
    return view;
  }
}
