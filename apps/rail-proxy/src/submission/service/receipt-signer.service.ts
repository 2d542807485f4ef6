import { Inject, Injectable } from '@nestjs/common';
import type { SigningKeyRing } from '@dlock/identity';
import { openSigningRing } from '@dlock/observability';
import {
  receiptClaims,
  RAIL_RECEIPT_TYPE,
  type ReceiptOutcome,
  type ReceiptSubject,
} from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import type { SubmissionRecord } from '../domain/submission.types';

/**
 * Signs rail receipts (docs/rail.md, "Receipts"): what the rail answered a
 * submission, as this service recorded it, or what the rail's record of a
 * payout showed when it was read. payment-resource moves a payout on a rail
 * outcome only with one. Its public keys are served at /.well-known/jwks.json.
 */
@Injectable()
export class ReceiptSigner {
  readonly ring: SigningKeyRing;

  constructor(@Inject(RAIL_PROXY_CONFIG) config: RailProxyConfig) {
    this.ring = openSigningRing('receipts', config.RECEIPT_SIGNING_KEYS);
  }

  sign(
    payoutId: string,
    submission: ReceiptSubject | null,
    answer: { out: ReceiptOutcome; ref: string | null; atMs: number },
  ): string {
    return this.ring.sign(RAIL_RECEIPT_TYPE, receiptClaims(payoutId, submission, answer));
  }

  /** The receipt of a record the rail answered (ACKED or REJECTED); null for every other record. */
  ofRecord(r: SubmissionRecord): string | null {
    if ((r.outcome !== 'ACKED' && r.outcome !== 'REJECTED') || r.resolvedAt === null) return null;
    const atMs = r.resolvedAt.getTime();
    return this.sign(r.payoutId, r, { out: r.outcome, ref: r.railReference, atMs });
  }
}
