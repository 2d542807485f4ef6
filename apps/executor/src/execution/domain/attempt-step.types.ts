import type { DlockError } from '@dlock/lock-api';
import type { PayoutView } from '@dlock/payout-contract';
import type { AttemptResult } from './execution-outcome.rules';
import type { InvalidHop, Step } from './attempt-labels.types';

/** What the rail acknowledged, as P6 ACKED and P3 carry it, with the proxy's receipt of it. */
export interface Ack {
  readonly submissionId: string;
  readonly railReference: string;
  readonly railReceipt: string;
}

/** A refusal as invalid: which hop refused which step's request, reported as payout_invalid. */
export interface InvalidRefusal {
  readonly hop: InvalidHop;
  readonly step: Step;
  readonly error: DlockError;
}

type WithoutId<T> = T extends unknown ? Omit<T, 'payoutId'> : never;

/** How an attempt ends; the loop adds the payout id. */
export type Ending = WithoutId<AttemptResult>;

/**
 * The next move of one attempt (payout-execution.service.ts runs them in a
 * bounded loop). Each step does at most one call; the pure functions of
 * recovery.rules.ts and hop-answers.rules.ts pick the step after it.
 */
export type AttemptStep =
  | { readonly to: 'reread' }
  | {
      readonly to: 'claim';
      readonly view: PayoutView;
      readonly expected: 'PENDING' | 'CLAIMED';
      /** A polled PENDING payout that moved on is read once and recovered by its state. */
      readonly rereadIfMoved: boolean;
    }
  | { readonly to: 'mark-submitted'; readonly view: PayoutView }
  | {
      readonly to: 'submit';
      readonly view: PayoutView;
      /** payment-resource's signed instruction from the P6 SUBMITTED just before (docs/rail.md). */
      readonly instruction: string;
    }
  | {
      readonly to: 'resolve-from-record';
      readonly view: PayoutView;
      /** Set after a DUPLICATE_SUBMISSION answer (the proxy's details): never submit again. */
      readonly duplicate?: Record<string, unknown>;
    }
  /** RAIL_ACKED whose R2 record has no receipt: the rail's record through R3 (recovery.rules.ts). */
  | { readonly to: 'post-from-evidence'; readonly view: PayoutView }
  | { readonly to: 'record-acked'; readonly ack: Ack }
  | {
      readonly to: 'record-rejected';
      readonly submissionId: string;
      readonly why: string;
      /** The proxy's receipt of the rail's decline (docs/rail.md, "Receipts"). */
      readonly railReceipt: string;
    }
  | {
      readonly to: 'quarantine';
      readonly submissionId?: string;
      readonly why: string;
      /** A refusal as invalid (payment-resource's of the ACKED write, or rail-proxy's of the submission), reported as payout_invalid first. */
      readonly refusal?: InvalidRefusal;
    }
  | { readonly to: 'post'; readonly ack: Ack }
  | {
      readonly to: 'end';
      readonly result: Ending;
      /** Logged at error level when set: an ending an operator should hear about. */
      readonly alarm?: string;
    };
