import { Logger } from '@nestjs/common';
import type { Counter } from 'prom-client';
import { PROOF_REFUSALS } from '@dlock/lock-api';
import {
  SafetyEvents,
  type FencePointEvents,
  type FloorRaiseAudit,
  type NoticeRefusal,
} from '@dlock/lock-nest';
import { counter } from '@dlock/metrics';

const RAISES_METRIC = 'fence_floor_raises_total';

/**
 * A dlock service's report of its fence point (`FencePointModule` of
 * @dlock/lock-nest): every raise audited with the notice's attribution
 * (`fence_floor_raised` warn when the memory moved, `fence_floor_unchanged`
 * otherwise) and counted by result; every refused notice a `proof_rejected`
 * safety event of `guard` (docs/operations.md, "Revocation fencing").
 */
export class FencePointAudit implements FencePointEvents {
  private readonly logger = new Logger('fence-floor');
  private readonly raises: Counter;

  constructor(
    private readonly guard: string,
    private readonly safety: SafetyEvents,
  ) {
    safety.checksProofs(guard, 'revocation', PROOF_REFUSALS);
    this.raises = counter({
      name: RAISES_METRIC,
      help: 'Revocation floor raises of this fence point, by whether its memory moved',
      labelNames: ['result'],
    });
    for (const result of ['raised', 'unchanged', 'not_found']) this.raises.inc({ result }, 0);
  }

  raised(a: FloorRaiseAudit): void {
    this.raises.inc({ result: a.result });
    const text = (v: bigint | null) => (v === null ? null : v.toString());
    const audit = {
      key: a.key,
      floor: a.floor.toString(),
      result: a.result,
      before: text(a.before),
      after: text(a.after),
      operator: a.operator,
      revocationId: a.revocationId,
      requestedBy: a.requestedBy,
      approvedBy: a.approvedBy,
      reason: a.reason,
    };
    if (a.result === 'raised')
      this.logger.warn({ event: 'fence_floor_raised', ...audit }, 'guard raised to floor');
    else this.logger.log({ event: 'fence_floor_unchanged', ...audit }, 'guard not moved');
  }

  refused(r: NoticeRefusal): void {
    this.safety.proofRejected({
      guard: this.guard,
      proof: 'revocation',
      reason: r.reason,
      key: r.key,
      operator: r.operator,
    });
  }
}
