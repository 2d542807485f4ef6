import type { OnModuleInit } from '@nestjs/common';
import {
  formatFencingToken,
  PROOF_REFUSALS,
  type FencingToken,
  type ProofRejectedError,
} from '@dlock/lock-api';
import { ProofVerifier, type ProofVerifierOptions } from '@dlock/identity';
import type { SafetyEvents } from '@dlock/observability';

/** Who presented a refused proof, as its safety event names them. */
export interface ProofPresenter {
  payoutId: string;
  ownerId: string;
  token: FencingToken;
  traceId?: string;
}

/**
 * A proof payment-resource checks offline before a write (docs/security.md,
 * "Signed grants"; docs/rail.md, "Receipts"): its verifier, started with the
 * module, and the one safety event of a refusal.
 */
export abstract class ProofCheck implements OnModuleInit {
  private readonly verifier: ProofVerifier;

  constructor(
    private readonly safety: SafetyEvents,
    options: ProofVerifierOptions,
  ) {
    safety.checksProofs('payment-resource', options.kind, PROOF_REFUSALS);
    this.verifier = new ProofVerifier(options);
  }

  onModuleInit(): Promise<void> {
    return this.verifier.start();
  }

  /** The claims of a genuine proof; the harness's simulation verifies on virtual time instead. */
  protected verify(proof: string | string[] | undefined): Promise<unknown> {
    return this.verifier.verify(proof);
  }

  /** A refusal's safety event (PROOF_REJECTED). */
  protected report(by: ProofPresenter, err: ProofRejectedError): void {
    this.safety.proofRejected({
      guard: 'payment-resource',
      proof: err.proof,
      reason: err.reason,
      field: err.details?.field,
      payoutId: by.payoutId,
      ownerId: by.ownerId,
      presentedToken: formatFencingToken(by.token),
      traceId: by.traceId,
    });
  }
}
