import { Inject, Injectable } from '@nestjs/common';
import {
  checkGrantClaims,
  grantProofClaims,
  GRANT_PROOF_TYPE,
  ProofRejectedError,
  type FencingToken,
} from '@dlock/lock-api';
import { SafetyEvents } from '@dlock/observability';
import { payoutAccountOf } from '@dlock/payout-contract';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import { ProofCheck } from './proof-check.service';

/** The part of a fenced write the proof speaks to. */
export interface ProvenWrite {
  payoutId: string;
  token: FencingToken;
  ownerId: string;
  proof: string | string[] | undefined;
  traceId: string;
}

/**
 * Fence point (a)'s first question, before its fence statement runs
 * (docs/security.md, "Signed grants"): did the lock-server grant this owner
 * this token on a payout key? The answer is the account the key guards; the
 * fence statement then admits the write only on that account.
 */
@Injectable()
export class GrantCheck extends ProofCheck {
  constructor(@Inject(PAYMENT_CONFIG) config: PaymentConfig, safety: SafetyEvents) {
    super(safety, {
      jwks: config.GRANT_JWKS,
      type: GRANT_PROOF_TYPE,
      kind: 'grant',
      name: 'grant proof',
    });
  }

  /** The account of the proven grant; PROOF_REJECTED (a safety event) otherwise. */
  async accountOf(write: ProvenWrite): Promise<string> {
    try {
      const claims = grantProofClaims(await this.verify(write.proof));
      checkGrantClaims(claims, { token: write.token, owner: write.ownerId });
      const accountId = payoutAccountOf(claims.key);
      if (accountId === null) {
        throw new ProofRejectedError(
          'grant',
          'lock-key',
          'the grant proof is not for a payout key',
        );
      }
      return accountId;
    } catch (err) {
      if (err instanceof ProofRejectedError) this.report(write, err);
      throw err;
    }
  }

  /** The proof is genuine but for another account than the payout's. */
  wrongAccount(write: ProvenWrite, payoutAccountId: string): ProofRejectedError {
    const err = new ProofRejectedError(
      'grant',
      'lock-key',
      'the grant proof is for another account’s lock',
      { accountId: payoutAccountId },
    );
    this.report(write, err);
    return err;
  }
}
