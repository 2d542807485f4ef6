import { Inject, Injectable } from '@nestjs/common';
import { ProofRejectedError, type FencingToken } from '@dlock/lock-api';
import { SafetyEvents } from '@dlock/observability';
import {
  checkReceipt,
  parseReceiptClaims,
  RAIL_RECEIPT_TYPE,
  receiptMismatch,
  type RailReceiptClaims,
  type ReceiptOutcome,
} from '@dlock/payout-contract';
import type { Payout } from '../persistence/payout.repository';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import type { Grant } from './payout-commands.service';
import { ProofCheck } from './proof-check.service';

/** A receipt as read: its claims, or why it proves nothing. */
export type Evidence = { claims: RailReceiptClaims } | { refused: ProofRejectedError };

/** Why the receipt does not prove this payout's rail answer, or null when it does. */
export function receiptRefusal(evidence: Evidence, payout: Payout): ProofRejectedError | null {
  return 'refused' in evidence ? evidence.refused : receiptMismatch(evidence.claims, payout);
}

/** What a rail outcome's request records: the rail's answer, and the submission it names. */
export interface RecordedAnswer {
  outcome: ReceiptOutcome;
  submissionId?: string;
  railReference?: string;
}

/**
 * A rail outcome moves a payout only on the rail-proxy's receipt of it
 * (docs/rail.md, "Receipts"): P6 ACKED and REJECTED, P3 and P8 carry one in
 * X-Rail-Receipt, checked offline against the proxy's published keys before
 * anything is written. A receipt that is missing, forged, of another payout,
 * submission or outcome, or of a newer holder's submission is 403
 * PROOF_REJECTED, a safety event, and nothing changes.
 */
@Injectable()
export class ReceiptCheck extends ProofCheck {
  constructor(@Inject(PAYMENT_CONFIG) config: PaymentConfig, safety: SafetyEvents) {
    super(safety, {
      jwks: config.RECEIPT_JWKS,
      type: RAIL_RECEIPT_TYPE,
      kind: 'receipt',
      name: 'rail receipt',
    });
  }

  /**
   * The receipt read before the write: its claims when it is genuine and
   * states what the request records, or why not. Nothing is refused yet: an
   * unknown payout, a stale token or a transition the payout does not allow
   * answer as they would without it; the write refuses the rest (receiptRefusal).
   */
  async read(
    receipt: string | string[] | undefined,
    expect: RecordedAnswer & { payoutId: string; grant: Grant },
  ): Promise<Evidence> {
    try {
      const claims = parseReceiptClaims(await this.verify(receipt));
      checkReceipt(claims, { ...expect, token: expect.grant.token });
      return { claims };
    } catch (err) {
      if (err instanceof ProofRejectedError) return { refused: err };
      throw err;
    }
  }

  /** Under the write's row lock, a receipt that does not prove the write: its safety event. */
  refused(
    payoutId: string,
    grant: { ownerId: string; token: FencingToken; traceId?: string },
    err: ProofRejectedError,
  ): void {
    this.report(
      { payoutId, ownerId: grant.ownerId, token: grant.token, traceId: grant.traceId },
      err,
    );
  }
}
