import type { ExecutionOutcome } from '@dlock/payout-contract';
import type { ExecuteLabel } from '../metrics';

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
