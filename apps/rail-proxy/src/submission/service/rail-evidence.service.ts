import { Inject, Injectable, Logger } from '@nestjs/common';
import { railClientRef, type RailEvidence } from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import { RailRecordClient } from '../clients/rail-record.client';
import { evidenceOf } from '../domain/rail-evidence.rules';
import { railUnavailableError } from '../domain/submission.errors';
import { SubmissionRepository } from '../persistence/submission.repository';
import { ReceiptSigner } from './receipt-signer.service';

/** The longest the rail's lookup may take before the evidence answers 503. */
export const EVIDENCE_LOOKUP_TIMEOUT_MS = 3_000;

/**
 * R3: the rail's record of a payout, and the receipt it earns (docs/rail.md,
 * "Receipts"). How the reconciler (and an operator) resolve a RAIL_AMBIGUOUS
 * payout with evidence payment-resource checks offline. A read: nothing is
 * presented to the rail and nothing is written here.
 */
@Injectable()
export class RailEvidenceService {
  private readonly logger = new Logger('rail-evidence');

  constructor(
    @Inject(RAIL_PROXY_CONFIG) private readonly config: RailProxyConfig,
    private readonly submissions: SubmissionRepository,
    private readonly rail: RailRecordClient,
    private readonly receipts: ReceiptSigner,
  ) {}

  async evidence(payoutId: string): Promise<RailEvidence> {
    const id = payoutId.toLowerCase();
    const records = await this.submissions.listByPayout(id);
    let lookup;
    try {
      lookup = await this.rail.lookup(
        railClientRef(id),
        AbortSignal.timeout(EVIDENCE_LOOKUP_TIMEOUT_MS),
      );
    } catch (err) {
      this.logger.warn({ payoutId: id, err: (err as Error).message }, 'rail lookup failed');
      const retryMs = this.config.RAIL_PROXY_UNAVAILABLE_RETRY_AFTER_MS;
      throw railUnavailableError('rail-unreachable', (err as Error).name, retryMs);
    }
    const verdict = evidenceOf(lookup, records);
    if (!verdict.receipt) {
      this.logger.log({ payoutId: id, why: verdict.why }, 'rail record earns no receipt');
      return { payoutId: id, lookup, railReceipt: null };
    }
    const { submission, out, ref, atMs } = verdict;
    return {
      payoutId: id,
      lookup,
      railReceipt: this.receipts.sign(id, submission, { out, ref, atMs }),
    };
  }
}
