import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import {
  checkGrantClaims,
  grantProofClaims,
  GRANT_PROOF_TYPE,
  parseFencingToken,
  ProofRejectedError,
} from '@dlock/lock-api';
import { ProofVerifier } from '@dlock/identity';
import { payoutLockKey } from '@dlock/payout-contract';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import type { KeptSubmission } from '../persistence/check-queries.repository';

/**
 * Verifies a kept submission's grant proof offline, as the fence points do
 * (docs/security.md, "Signed grants"): signed by one of the lock-server's
 * published keys (GRANT_JWKS), for the payout's account lock, under the
 * submission's token, to the submission's owner. The detective half of INV-07
 * (docs/reconciler.md, `submission_grant_proven`).
 */
@Injectable()
export class SubmissionGrants implements OnModuleInit {
  private readonly verifier: ProofVerifier;

  constructor(@Inject(RECONCILER_CONFIG) config: ReconcilerConfig) {
    this.verifier = new ProofVerifier({
      jwks: config.GRANT_JWKS,
      type: GRANT_PROOF_TYPE,
      kind: 'grant',
      name: 'grant proof',
      rememberMs: 0, // each kept proof is read once
    });
  }

  async onModuleInit(): Promise<void> {
    await this.verifier.start();
  }

  /**
   * Why the submission has no valid grant (a PROOF_REJECTED reason: missing,
   * malformed, unknown-key, signature, lock-key, owner, token), or null when it
   * has one. With no key loaded nothing can be judged: that throws, and the
   * check reports `error` ("could not look") instead of a finding per row.
   */
  judge = async (sub: KeptSubmission): Promise<string | null> => {
    if (this.verifier.knownKeys === 0) {
      throw new Error('no grant key loaded from GRANT_JWKS: cannot verify grant proofs');
    }
    try {
      const claims = grantProofClaims(await this.verifier.verify(sub.grantProof ?? undefined));
      checkGrantClaims(claims, {
        token: parseFencingToken(sub.presentedToken, 'rail_submission.presented_token'),
        owner: sub.ownerId,
        key: payoutLockKey(sub.accountId),
      });
      return null;
    } catch (err) {
      if (err instanceof ProofRejectedError) return err.reason;
      throw err;
    }
  };
}
