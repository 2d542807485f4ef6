import { Inject, Injectable } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
import type { SigningKeyRing } from '@dlock/identity';
import { openSigningRing } from '@dlock/observability';
import { instructionClaims, PAYOUT_INSTRUCTION_TYPE } from '@dlock/payout-contract';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import type { Payout } from '../persistence/payout.repository';

/**
 * Signs the payout instruction of a RAIL_SUBMITTED write (docs/rail.md,
 * "Instructions"): the payout as this service holds it, the token and the
 * owner. The rail-proxy admits a submission only on it, so what reaches the
 * rail is what was recorded here. Its public keys are served at
 * /.well-known/jwks.json.
 */
@Injectable()
export class InstructionSigner {
  readonly ring: SigningKeyRing;

  constructor(@Inject(PAYMENT_CONFIG) config: PaymentConfig) {
    this.ring = openSigningRing('instructions', config.INSTRUCTION_SIGNING_KEYS);
  }

  sign(payout: Payout, token: FencingToken, ownerId: string): string {
    const claims = instructionClaims(payout, token, ownerId, Date.now());
    return this.ring.sign(PAYOUT_INSTRUCTION_TYPE, claims);
  }
}
