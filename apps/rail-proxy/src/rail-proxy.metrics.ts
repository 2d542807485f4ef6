import { Injectable } from '@nestjs/common';
import { counter, histogram } from '@dlock/metrics';

export type SubmissionOutcomeLabel = 'acked' | 'rejected' | 'timeout' | 'fenced' | 'unavailable';

/** rail-proxy's own (non-safety) metrics; no ids or tokens in labels (NFR-09). */
@Injectable()
export class RailProxyMetrics {
  readonly submissions = counter({
    name: 'rail_submission_total',
    help: 'Rail submissions by recorded outcome',
    labelNames: ['outcome'],
  });

  readonly replays = counter({
    name: 'rail_idempotent_replay_total',
    help: 'Submissions answered from a stored response (same key, token and body)',
  });

  readonly forwardSeconds = histogram({
    name: 'rail_forward_seconds',
    help: 'Time from presenting a submission to the rail until its outcome is known',
    labelNames: ['outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16],
  });

  outcome(label: SubmissionOutcomeLabel): void {
    this.submissions.inc({ outcome: label });
  }
}
