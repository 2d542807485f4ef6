import { Injectable } from '@nestjs/common';
import { counter, gauge, histogram } from '@dlock/metrics';
import { auditChainNames } from '@dlock/persistence';
import { CHECK_NAMES, FINDING_EVENTS } from './detective/domain/check-names.types';

export const RESOLUTION_RESULTS = [
  'acked',
  'not_found',
  'duplicate',
  'mismatch',
  'waiting',
  'contended',
  'fenced',
  'lost',
  'not_ambiguous',
  'error',
] as const;
export type ResolutionResult = (typeof RESOLUTION_RESULTS)[number];

/**
 * The reconciler's own metrics (docs/operations.md naming). Labels are fixed sets:
 * a check name, a result, a loop — never a payout, account or token (NFR-09).
 */
@Injectable()
export class ReconcilerMetrics {
  readonly resolutionTotal = counter({
    name: 'reconciler_resolution_total',
    help: 'RAIL_AMBIGUOUS payouts examined, by what the pass did with each',
    labelNames: ['result'],
  });
  readonly ambiguousPayouts = gauge({
    name: 'reconciler_ambiguous_payouts',
    help: 'RAIL_AMBIGUOUS payouts seen by the last resolution pass',
  });
  readonly duplicatePaymentTotal = counter({
    name: 'reconciler_duplicate_payment_total',
    help: 'Payouts the rail booked more than once under one client reference (counted once each)',
  });
  readonly duplicatePaymentsOpen = gauge({
    name: 'reconciler_duplicate_payments_open',
    help: 'RAIL_AMBIGUOUS payouts currently flagged as duplicate payments',
  });
  readonly escalatedTotal = counter({
    name: 'payout_ambiguous_escalated_total',
    help: 'Ambiguous payouts escalated to a human after the resolution SLA (A-10), once each',
  });
  readonly pastSla = gauge({
    name: 'payout_ambiguous_past_sla',
    help: 'RAIL_AMBIGUOUS payouts older than the resolution SLA in the last pass',
  });
  readonly invariantViolations = gauge({
    name: 'reconciler_invariant_violations',
    help: 'Offending rows found by the last run of each detective check',
    labelNames: ['check'],
  });
  readonly detectiveFindingsTotal = counter({
    name: 'reconciler_detective_findings_total',
    help: 'Offenders the detective checks over kept records found, each counted once when first found',
    labelNames: ['check'],
  });
  readonly checkErrorsTotal = counter({
    name: 'reconciler_check_errors_total',
    help: 'Detective check runs that could not complete (database unreachable, timeout)',
    labelNames: ['check'],
  });
  readonly lastCheckTimestamp = gauge({
    name: 'reconciler_last_check_timestamp_seconds',
    help: 'Unix time the detective checks last completed with every check run (the start until then)',
  });
  readonly railSweepFindingsOpen = gauge({
    name: 'reconciler_rail_sweep_findings_open',
    help: 'Terminal payouts the rail sweep currently flags, by finding',
    labelNames: ['finding'],
  });
  readonly railSweepLastCompleted = gauge({
    name: 'reconciler_rail_sweep_last_completed_timestamp_seconds',
    help: 'Unix time a rail sweep pass last looked up every terminal payout that was due (the start until then)',
  });
  readonly passSeconds = histogram({
    name: 'reconciler_pass_seconds',
    help: 'Duration of one resolution pass or one detective run',
    labelNames: ['loop'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
  });

  readonly fenceFloorRaisesTotal = counter({
    name: 'reconciler_fence_floor_raises_total',
    help: 'Guard raises for revoked payout locks, by guard and answer (raised, unchanged, not_found, error)',
    labelNames: ['guard', 'result'],
  });
  readonly revocationsUnfenced = gauge({
    name: 'reconciler_revocations_unfenced',
    help: 'Payout-lock revocations the last fencing pass could not yet raise at both guards',
  });
  readonly tokenProbeTotal = counter({
    name: 'reconciler_token_probe_total',
    help: 'Token-source probes, by result (ok, behind, contended)',
    labelNames: ['result'],
  });
  /** Audit chains (docs/audit.md): labels are chain names, never a row id. */
  readonly auditBreaks = gauge({
    name: 'dlock_audit_chain_breaks',
    help: '1 when the last verification of the audit chain found a break (its first break is logged as audit_chain_break)',
    labelNames: ['chain'],
  });
  readonly auditLinks = gauge({
    name: 'dlock_audit_chain_verified_links',
    help: 'Links of the audit chain that held at the last verification',
    labelNames: ['chain'],
  });
  readonly auditErrorsTotal = counter({
    name: 'dlock_audit_chain_check_errors_total',
    help: 'Audit chain verifications that could not complete (database unreachable, timeout)',
    labelNames: ['chain'],
  });
  readonly auditLastVerified = gauge({
    name: 'dlock_audit_chain_last_verified_timestamp_seconds',
    help: 'Unix time every audit chain the reconciler reads was last verified to the end (the start until then)',
  });
  readonly tokenSourceBehind = gauge({
    name: 'reconciler_token_source_behind',
    help: '1 when the last probe grant was at or below a value a guard holds (lockdb rewound?)',
  });

  constructor() {
    // Every series exists from the start, so "0" is observable before anything happens.
    for (const check of CHECK_NAMES) {
      this.invariantViolations.set({ check }, 0);
      this.checkErrorsTotal.inc({ check }, 0);
    }
    for (const check of Object.keys(FINDING_EVENTS)) this.detectiveFindingsTotal.inc({ check }, 0);
    for (const result of RESOLUTION_RESULTS) this.resolutionTotal.inc({ result }, 0);
    for (const guard of ['account', 'rail']) {
      for (const result of ['raised', 'unchanged', 'not_found', 'error']) {
        this.fenceFloorRaisesTotal.inc({ guard, result }, 0);
      }
    }
    for (const result of ['ok', 'behind', 'contended']) this.tokenProbeTotal.inc({ result }, 0);
    for (const chain of auditChainNames()) {
      this.auditBreaks.set({ chain }, 0);
      this.auditErrorsTotal.inc({ chain }, 0);
    }
    // Until their first completion the staleness gauges read the start: their alerts count
    // from there (docs/reconciler.md). At 0 they would read "last done in 1970" and the
    // stale alerts would hold at every start.
    const startedAt = Date.now() / 1000;
    for (const gauge of [
      this.lastCheckTimestamp,
      this.railSweepLastCompleted,
      this.auditLastVerified,
    ])
      gauge.set(startedAt);
  }
}
