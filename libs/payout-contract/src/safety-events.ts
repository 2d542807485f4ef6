/**
 * The payout services' safety events (docs/operations.md, "Safety events"), registered with
 * `registerSafetyEvents` of @dlock/observability by the apps that emit them, when their module
 * loads. The event and metric names are the ones alerts and runbooks name: never renamed.
 */

/** What the reconciler's rail sweep can find for a terminal payout (docs/reconciler.md). */
export const RAIL_SWEEP_FINDINGS = [
  'rail_double_payment',
  'posted_without_transfer',
  'paid_but_not_posted',
] as const;
export type RailSweepFinding = (typeof RAIL_SWEEP_FINDINGS)[number];

export type PayoutSafetyEvent =
  | 'rail_ambiguous'
  | 'duplicate_rail_submission_attempted'
  | 'invalid_transition'
  | RailSweepFinding;

/** The shape of @dlock/observability's SafetyEventSpec (this library sits below it). */
interface EventSpec {
  readonly event: PayoutSafetyEvent;
  readonly message: string;
  readonly metric: string;
  readonly help: string;
  readonly fixedLabels?: Readonly<Record<string, string>>;
  readonly coalesceBy?: readonly string[];
}

export const PAYOUT_SAFETY_EVENTS: readonly EventSpec[] = [
  {
    event: 'rail_ambiguous',
    message: 'rail outcome unknown; payout quarantined',
    metric: 'rail_ambiguous_total',
    help: 'Rail attempts with an unknown outcome',
  },
  {
    event: 'duplicate_rail_submission_attempted',
    message: 'second submission for a payout refused',
    metric: 'rail_duplicate_attempted_total',
    help: 'Submissions refused because the payout already had one',
    coalesceBy: ['payoutId', 'ownerId', 'presentedToken'],
  },
  {
    event: 'invalid_transition',
    message: 'payout transition rejected',
    metric: 'payout_invalid_transition_total',
    help: 'Payout transitions rejected by the transition table',
    coalesceBy: ['payoutId', 'payoutEvent', 'actor'],
  },
  // Counted once per payout and finding: "how many payouts", not "how many looks".
  ...RAIL_SWEEP_FINDINGS.map((finding) => ({
    event: finding,
    message: 'the rail disagrees with a terminal payout; a human must decide',
    metric: 'reconciler_rail_sweep_findings_total',
    help: 'Terminal payouts the rail disagrees with, once per payout and finding',
    fixedLabels: { finding },
  })),
];
