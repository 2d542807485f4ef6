import type { ExecutionOutcome } from '@dlock/payout-contract';
import type { ExecuteLabel } from './attempt-labels.types';

export type { ExecutionOutcome };

/**
 * One attempt at one payout: the six outcomes of docs/executor.md §3, plus `skipped`
 * for a payout the fresh re-read shows there is nothing to do for (already
 * terminal, quarantined, or claimed by the world in between).
 */
export type AttemptResult =
  ExecutionOutcome | { kind: 'skipped'; payoutId: string; reason: string };

/**
 * The payout_execute_seconds label of a result, or null for results that are
 * not an execution (contended, skipped: debug log only, docs/executor.md). Every way
 * this worker gives up on its attempt — fenced out, lock lost, lease too
 * short, rail unavailable — is `abandoned`: the payout is left for a holder
 * with a fresh token.
 */
export function executeLabel(result: AttemptResult): ExecuteLabel | null {
  switch (result.kind) {
    case 'posted':
      return 'posted';
    case 'failed':
      return 'failed';
    case 'ambiguous':
      return 'ambiguous';
    case 'abandoned':
    case 'fenced':
      return 'abandoned';
    case 'contended':
    case 'skipped':
      return null;
  }
}

/** Detailed result label for executor_payout_attempts_total (no ids, NFR-09). */
export function attemptLabel(result: AttemptResult): string {
  switch (result.kind) {
    case 'abandoned':
      return `abandoned_${result.reason.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`;
    case 'fenced':
      return `fenced_${result.where}`;
    case 'skipped':
      return `skipped_${result.reason.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`;
    case 'posted':
    case 'failed':
    case 'ambiguous':
    case 'contended':
      return result.kind;
  }
}

/** Why an attempt is abandoned or skipped, but for an unexpected error (`error-<code>`). */
const ABANDON_REASONS = [
  'invalid',
  'lease-too-short',
  'lock-lost',
  'proxy-unreachable',
  'rail-unavailable',
  'submit-outcome-unknown',
  'shutting-down',
  'acked-without-reference',
  'duplicate-without-record',
];
const SKIP_REASONS = ['terminal', 'quarantined', 'not-claimable'];

/**
 * Every executor_payout_attempts_total{result} an attempt can end with but the
 * `abandoned_error_<code>` of an unexpected error (docs/executor.md, "Outcomes"): at 0 from the
 * start, so a query finds each and an increase() counts the first.
 */
export const ATTEMPT_RESULTS: readonly string[] = [
  ...(['posted', 'ambiguous', 'contended'] as const).map((kind) =>
    attemptLabel({ kind, payoutId: '' }),
  ),
  attemptLabel({ kind: 'failed', payoutId: '', reason: '' }),
  ...(['account', 'rail'] as const).map((where) =>
    attemptLabel({ kind: 'fenced', payoutId: '', where }),
  ),
  ...SKIP_REASONS.map((reason) => attemptLabel({ kind: 'skipped', payoutId: '', reason })),
  ...ABANDON_REASONS.map((reason) => attemptLabel({ kind: 'abandoned', payoutId: '', reason })),
];
