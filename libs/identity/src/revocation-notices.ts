import {
  checkRevocationNotice,
  REVOCATION_NOTICE_TYPE,
  revocationNoticeClaims,
  type NoticeExpectation,
  type RevocationNoticeClaims,
} from '@dlock/lock-api';
import { ProofVerifier } from './proof-verifier';

/**
 * A fence point's one question before it raises anything (docs/security.md,
 * "Revocation notices"): did the lock-server sign this revocation notice, and
 * does it say what the raise in front of it says? Offline, against the
 * lock-server's published keys (its GRANT_JWKS). Every "no" is a
 * ProofRejectedError of kind `revocation` (missing, malformed, unknown-key,
 * signature, lock-key, mismatch), which the caller reports and answers 403.
 * Generic: it knows lock keys and floors, never what a key guards.
 */
export class RevocationNotices {
  private readonly verifier: ProofVerifier;

  /** `jwks`: a JWKS file path or http(s) URL of the lock-server's grant keys. */
  constructor(jwks: string) {
    // Each notice is met a few times at most (the revoke, a reconciler): memory buys nothing.
    this.verifier = new ProofVerifier({
      jwks,
      type: REVOCATION_NOTICE_TYPE,
      kind: 'revocation',
      name: 'revocation notice',
      rememberMs: 0,
    });
  }

  /** Loads the keys; a file not written yet is an empty key set until it appears. */
  start(): Promise<void> {
    return this.verifier.start();
  }

  /**
   * The notice's claims when it is genuine and matches `expect` (each field
   * checked only when given: a bare notice names its own key and floor).
   */
  async verify(
    notice: string | string[] | undefined,
    expect: Partial<NoticeExpectation> = {},
  ): Promise<RevocationNoticeClaims> {
    const claims = revocationNoticeClaims(await this.verifier.verify(notice));
    checkRevocationNotice(claims, { ...expect, key: expect.key ?? claims.key });
    return claims;
  }
}
