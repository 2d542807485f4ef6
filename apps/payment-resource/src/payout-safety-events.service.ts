import { Injectable } from '@nestjs/common';
import { SafetyEvents } from '@dlock/observability';

/**
 * payment-resource's own safety events, registered by its module (app.module.ts) from
 * PAYOUT_SAFETY_EVENTS: named methods over SafetyEvents' generic `record`.
 */
@Injectable()
export class PayoutSafetyEvents {
  constructor(private readonly safety: SafetyEvents) {}

  /** The transition table refused a command (docs/operations.md, "Safety events"). */
  invalidTransition(fields: Record<string, unknown>): void {
    this.safety.record('invalid_transition', fields);
  }
}
