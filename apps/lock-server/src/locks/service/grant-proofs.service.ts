import { Inject, Injectable } from '@nestjs/common';
import {
  checkGrantClaims,
  formatFencingToken,
  ProofRejectedError,
  grantProofClaims,
  GRANT_PROOF_TYPE,
  REVOCATION_NOTICE_TYPE,
  type RevocationNoticeClaims,
  type GrantExpectation,
  type GrantProofClaims,
  type LockGrant,
} from '@dlock/lock-api';
import { ForbiddenError, ProofVerifier, type SigningKeyRing } from '@dlock/identity';
import { openSigningRing } from '@dlock/observability';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';

/**
 * Signs every grant this server issues, and checks the proofs callers bring
 * back (docs/security.md, "Signed grants"); signs the notice of each
 * revocation, the only thing a fence point raises a floor on ("Revocation
 * notices"). The key ring is the lock-server's own (GRANT_SIGNING_KEYS),
 * shared by its replicas; its public half is served at /.well-known/jwks.json
 * for the fence points. The JWS `typ` keeps a notice from passing as a grant.
 */
@Injectable()
export class GrantProofs {
  readonly ring: SigningKeyRing;
  private readonly verifier: ProofVerifier;

  constructor(@Inject(LOCK_SERVER_CONFIG) config: LockServerConfig) {
    this.ring = openSigningRing('grants', config.GRANT_SIGNING_KEYS);
    this.verifier = new ProofVerifier({
      jwks: () => this.ring.publicJwks,
      type: GRANT_PROOF_TYPE,
      kind: 'grant',
      name: 'grant proof',
    });
  }

  /** The proof of `grant`: the same claims, so the same proof, on every renew (Ed25519 is deterministic). */
  sign(grant: LockGrant): string {
    const claims: GrantProofClaims = {
      key: grant.key,
      tok: formatFencingToken(grant.fencingToken),
      sub: grant.ownerId,
      sid: grant.sessionId,
      iat: Math.floor(grant.acquiredAt.getTime() / 1000),
    };
    const proof = this.ring.sign(GRANT_PROOF_TYPE, claims);
    this.verifier.remember(proof, claims);
    return proof;
  }

  /**
   * The notice of a revocation this server recorded: `floor` is the one its
   * revoke took from the token sequence, never a caller's number, so no notice
   * names a floor above the sequence.
   */
  notice(revocation: {
    key: string;
    floor: bigint;
    revocationId: string;
    requestedBy: string;
    approvedBy: string | null;
  }): string {
    const claims: RevocationNoticeClaims = {
      key: revocation.key,
      floor: formatFencingToken(revocation.floor),
      rid: revocation.revocationId,
      req: revocation.requestedBy,
      apr: revocation.approvedBy,
      iat: Math.floor(Date.now() / 1000),
    };
    return this.ring.sign(REVOCATION_NOTICE_TYPE, claims);
  }

  /**
   * A proof of this server's describing the request (key, token, owner): else
   * PROOF_REJECTED; a genuine proof of another identity's grant is FORBIDDEN
   * (a grant belongs to its owner, docs/security.md). Answers the proof's claims.
   */
  async check(
    proof: string | string[] | undefined,
    expect: GrantExpectation,
  ): Promise<GrantProofClaims> {
    try {
      const claims = grantProofClaims(await this.verifier.verify(proof));
      checkGrantClaims(claims, expect);
      return claims;
    } catch (err) {
      if (err instanceof ProofRejectedError && err.reason === 'owner') {
        throw new ForbiddenError('this grant belongs to another identity', {
          reason: 'not-grant-owner',
        });
      }
      throw err;
    }
  }
}
