import { Injectable } from '@nestjs/common';
import { counter, histogram } from '@dlock/metrics';
import { PAYOUT_STATES } from '@dlock/payout-contract';

export type WriteOperation = 'claim' | 'post' | 'rail_outcome' | 'resolve' | 'abandon';
/** What a fenced write (P2, P3, P6, P8) can end with; a claim also `insufficient_funds`. */
const FENCED_RESULTS = [
  'ok',
  'replayed',
  'fenced_out',
  'proof_rejected',
  'rejected',
  'unavailable',
  'error',
] as const;
export type WriteResult = (typeof FENCED_RESULTS)[number] | 'insufficient_funds';

/** Every (operation, result) payment_write_seconds can observe (docs/payment-resource.md). */
const WRITE_OUTCOMES: readonly [WriteOperation, WriteResult][] = [
  ...(['claim', 'post', 'rail_outcome', 'resolve'] as const).flatMap((operation) =>
    FENCED_RESULTS.map((result): [WriteOperation, WriteResult] => [operation, result]),
  ),
  ['claim', 'insufficient_funds'],
  ['abandon', 'ok'],
  ['abandon', 'rejected'],
  ['abandon', 'error'],
];

/** payment-resource's own metrics; labels never carry an id or a token (NFR-09). */
@Injectable()
export class PaymentMetrics {
  readonly writeSeconds = histogram({
    name: 'payment_write_seconds',
    help: 'Fenced and operator writes on payouts, by operation and result',
    labelNames: ['operation', 'result'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  });
  readonly transitionsTotal = counter({
    name: 'payout_transitions_total',
    help: 'Payout state transitions applied, by target state',
    labelNames: ['to_state'],
  });
  /**
   * Claims refused because the payout was no longer in the state the caller read (it lost
   * a race to another worker): not a safety event, unlike payout_invalid_transition_total
   * (docs/payment-resource.md). `state` is the state the claim found.
   */
  readonly staleClaimsTotal = counter({
    name: 'payout_stale_claims_total',
    help: 'Claims refused because the payout had moved on from the expected state (a lost race), by the state found',
    labelNames: ['state'],
  });
  readonly ledgerPostingsTotal = counter({
    name: 'ledger_postings_total',
    help: 'Balanced ledger groups written for payouts',
  });

  /**
   * Every known series at 0 from the start: a query finds it before its first event, and a
   * rate or increase() counts that first one too.
   */
  constructor() {
    for (const [operation, result] of WRITE_OUTCOMES) this.writeSeconds.zero({ operation, result });
    for (const state of PAYOUT_STATES) this.staleClaimsTotal.inc({ state }, 0);
  }
}
