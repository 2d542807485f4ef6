import { registerSafetyEvents, type SafetyEventSpec } from '@dlock/lock-nest';

/**
 * The example's own safety event (docs/extending.md, "Your own error codes and safety events"):
 * a grant found a refund an earlier grant left SENDING, so whether its money moved is unknown
 * and someone must check the payment network (the route answers REFUND_NEEDS_CHECK). A log line
 * `event=refund_needs_check` and a counter an alert watches; the names are what operators search
 * for, so they are never renamed.
 */
export const REFUND_SAFETY_EVENTS: readonly SafetyEventSpec[] = [
  {
    event: 'refund_needs_check',
    message: 'refund left half-sent by an earlier grant: check the payment network',
    metric: 'refund_needs_check_total',
    help: 'Refunds found SENDING under an earlier grant: whether their money moved is unknown',
  },
];

/** Called when the module loads (refund-sender.module.ts): before SafetyEvents is built, so the counter starts at 0. */
export function registerRefundSafetyEvents(): void {
  registerSafetyEvents(REFUND_SAFETY_EVENTS);
}
