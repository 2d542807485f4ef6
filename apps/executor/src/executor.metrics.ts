import { Injectable } from '@nestjs/common';
import { counter, gauge, histogram } from '@dlock/metrics';
import { ATTEMPT_RESULTS } from './execution/domain/execution-outcome.rules';
import {
  EXECUTE_LABELS,
  INVALID_HOPS,
  STEPS,
  type Step,
} from './execution/domain/attempt-labels.types';

export {
  EXECUTE_LABELS,
  INVALID_HOPS,
  STEPS,
  type ExecuteLabel,
  type InvalidHop,
  type Step,
} from './execution/domain/attempt-labels.types';

/** executor_poll_passes_total{result} (docs/executor.md, "Metrics"). */
export const PASS_RESULTS = ['ok', 'idle', 'full', 'no_session', 'error'] as const;

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];

/** Executor metrics; no payout id, account id, key or token in any label (NFR-09). */
@Injectable()
export class ExecutorMetrics {
  readonly executeSeconds = histogram({
    name: 'payout_execute_seconds',
    help: 'One payout attempt, from acquire to release, by outcome',
    labelNames: ['outcome'],
    buckets: BUCKETS,
  });

  readonly backlogAgeSeconds = gauge({
    name: 'payout_backlog_age_seconds',
    help: 'Age of the oldest PENDING payout seen by the last poll (0 when none)',
  });

  readonly attemptsTotal = counter({
    name: 'executor_payout_attempts_total',
    help: 'Payout attempts by detailed result (contended, skipped, fenced, lease_short …)',
    labelNames: ['result'],
  });

  readonly stepSeconds = histogram({
    name: 'executor_step_seconds',
    help: 'Duration of each call of the critical section',
    labelNames: ['step'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });

  readonly passesTotal = counter({
    name: 'executor_poll_passes_total',
    help: 'Polling passes by result (ok, idle, full, no_session, error)',
    labelNames: ['result'],
  });

  /** Alerted on by name (docs/executor.md § Invalid payouts): keep the name and label stable. */
  readonly payoutInvalidTotal = counter({
    name: 'executor_payout_invalid_total',
    help: 'Payouts a downstream refused as invalid (400 VALIDATION_FAILED), by refusing hop',
    labelNames: ['hop'],
  });

  readonly inFlight = gauge({
    name: 'executor_payouts_in_flight',
    help: 'Payouts being executed now',
  });

  /**
   * Every series of a known label value exists from the start (at 0): a query finds it, and
   * an alert's increase() sees its first event, which a series appearing at 1 hides.
   */
  constructor() {
    for (const outcome of EXECUTE_LABELS) this.executeSeconds.zero({ outcome });
    for (const step of STEPS) this.stepSeconds.zero({ step });
    for (const result of PASS_RESULTS) this.passesTotal.inc({ result }, 0);
    for (const hop of INVALID_HOPS) this.payoutInvalidTotal.inc({ hop }, 0);
    for (const result of ATTEMPT_RESULTS) this.attemptsTotal.inc({ result }, 0);
  }

  /** Times one call of the critical section. */
  async step<T>(step: Step, fn: () => Promise<T>): Promise<T> {
    const end = this.stepSeconds.startTimer({ step });
    try {
      return await fn();
    } finally {
      end();
    }
  }
}
