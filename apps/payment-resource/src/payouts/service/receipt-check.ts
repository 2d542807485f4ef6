import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { formatFencingToken, PROOF_REFUSALS, ProofRejectedError } from '@dlock/lock-api';
import { ProofVerifier } from '@dlock/identity';
import { SafetyEvents } from '@dlock/observability';
import {
  checkReceipt,
  parseReceiptClaims,
  RAIL_RECEIPT_TYPE,
  receiptMismatch,
  type RailReceiptClaims,
  type ReceiptOutcome,
  type ReceiptPayout,
} from '@dlock/payout-contract';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import type { Grant } from './payout-commands.service';

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
export class ReceiptCheck implements OnModuleInit {
  private readonly verifier: ProofVerifier;

  constructor(
    @Inject(PAYMENT_CONFIG) config: PaymentConfig,
    private readonly safety: SafetyEvents,
  ) {
    safety.checksProofs('payment-resource', 'receipt', PROOF_REFUSALS);
    this.verifier = new ProofVerifier({
      jwks: config.RECEIPT_JWKS,
      type: RAIL_RECEIPT_TYPE,
      kind: 'receipt',
    });
  }

  onModuleInit(): Promise<void> {
    return this.verifier.start();
  }

  /** The claims of a genuine receipt that states what the request records; PROOF_REJECTED otherwise. */
  async verify(
    payoutId: string,
    grant: Grant,
    receipt: string | string[] | undefined,
    answer: RecordedAnswer,
  ): Promise<RailReceiptClaims> {
    try {
      const claims = parseReceiptClaims(await this.verifier.verify(receipt));
      checkReceipt(claims, { payoutId, token: grant.token, ...answer });
      return claims;
    } catch (err) {
      if (err instanceof ProofRejectedError) this.refused(payoutId, grant, err);
      throw err;
    }
  }

  /** Under the write's row lock: the receipt's submission is this payout's, or PROOF_REJECTED. */
  againstPayout(claims: RailReceiptClaims, payout: ReceiptPayout & { payoutId: string }, grant: Grant) {
    const err = receiptMismatch(claims, payout);
    if (err === null) return;
    this.refused(payout.payoutId, grant, err);
    throw err;
  }

  private refused(payoutId: string, grant: Grant, err: ProofRejectedError): void {
    this.safety.proofRejected({
      guard: 'payment-resource',
      proof: err.proof,
      reason: err.reason,
      field: err.details?.field,
      payoutId,
      ownerId: grant.ownerId,
      presentedToken: formatFencingToken(grant.token),
      traceId: grant.traceId,
    });
  }
}
