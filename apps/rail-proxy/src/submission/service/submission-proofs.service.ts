import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import {
  checkGrantClaims,
  formatFencingToken,
  grantProofClaims,
  GRANT_PROOF_TYPE,
  PROOF_REFUSALS,
  ProofRejectedError,
} from '@dlock/lock-api';
import { ProofVerifier } from '@dlock/identity';
import { SafetyEvents } from '@dlock/observability';
import {
  checkInstruction,
  parseInstructionClaims,
  payoutLockKey,
  PAYOUT_INSTRUCTION_TYPE,
} from '@dlock/payout-contract';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from '../../config';
import type { SubmissionRequest } from '../domain/submission.types';

/**
 * Fence point (c)'s first questions, before any intent is written
 * (docs/rail.md, "Instructions"; docs/security.md, "Signed grants"): did the
 * lock-server grant this owner this token on the payout's account lock, and
 * did payment-resource record exactly this payout as submitted under it? A
 * "no" is 403 PROOF_REJECTED, a safety event, and nothing reaches the rail.
 */
@Injectable()
export class SubmissionProofs implements OnModuleInit {
  private readonly grants: ProofVerifier;
  private readonly instructions: ProofVerifier;

  constructor(
    @Inject(RAIL_PROXY_CONFIG) config: RailProxyConfig,
    private readonly safety: SafetyEvents,
  ) {
    for (const proof of ['grant', 'instruction'])
      safety.checksProofs('rail-proxy', proof, PROOF_REFUSALS);
    this.grants = new ProofVerifier({
      jwks: config.GRANT_JWKS,
      type: GRANT_PROOF_TYPE,
      kind: 'grant',
      name: 'grant proof',
      rememberMs: 0, // one submission per payout: each proof is met once
    });
    this.instructions = new ProofVerifier({
      jwks: config.INSTRUCTION_JWKS,
      type: PAYOUT_INSTRUCTION_TYPE,
      kind: 'instruction',
      name: 'payout instruction',
      rememberMs: 0,
    });
  }

  async onModuleInit(): Promise<void> {
    await Promise.all([this.grants.start(), this.instructions.start()]);
  }

  async check(req: SubmissionRequest): Promise<void> {
    try {
      const grant = grantProofClaims(await this.grants.verify(req.grantProof));
      checkGrantClaims(grant, {
        token: req.presentedToken,
        owner: req.ownerId,
        key: payoutLockKey(req.accountId),
      });
      const instruction = parseInstructionClaims(await this.instructions.verify(req.instruction));
      checkInstruction(instruction, req, req.presentedToken, req.ownerId);
    } catch (err) {
      if (err instanceof ProofRejectedError) this.refused(req, err);
      throw err;
    }
  }

  private refused(req: SubmissionRequest, err: ProofRejectedError): void {
    this.safety.proofRejected({
      guard: 'rail-proxy',
      proof: err.proof,
      reason: err.reason,
      field: err.details?.field,
      payoutId: req.payoutId,
      accountId: req.accountId,
      ownerId: req.ownerId,
      presentedToken: formatFencingToken(req.presentedToken),
      traceId: req.traceId,
    });
  }
}
