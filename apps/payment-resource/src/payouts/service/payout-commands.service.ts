import type { FencedGrantHeaders } from '@dlock/http-contract';
import { Inject, Injectable } from '@nestjs/common';
import { ValidationError } from '@dlock/lock-api';
import type {
  AbandonRequest,
  AbandonResponse,
  ClaimRequest,
  ClaimResponse,
  PostRequest,
  PostResponse,
  RailOutcomeRequest,
  RailOutcomeResponse,
  ResolveRequest,
  ResolveResponse,
} from '@dlock/payout-contract';
import { PAYMENT_CONFIG, type PaymentConfig } from '../../config';
import type { Payout } from '../persistence/payout.repository';
import { FencedWriter } from './fenced-writer.service';
import { InstructionSigner } from './instruction-signer.service';
import {
  abandonCommand,
  claimCommand,
  postCommand,
  railOutcomeCommand,
  resolveCommand,
} from './payout-commands.rules';
import { ReceiptCheck } from './receipt-check.service';

/**
 * The protected-write headers, parsed by the controller's `@FencedGrant()` and
 * passed explicitly (docs/payment-resource.md step 3); the proof is checked first.
 */
export type Grant = FencedGrantHeaders;

/** The longest reason a transition records (the body's own limit). */
const REASON_MAX_LENGTH = 1024;

/**
 * Every payout write (docs/payment-resource.md, "One description per
 * command"): what the request brings (a receipt read, an instruction signer),
 * handed with the command's description (payout-commands.rules.ts) to the writer,
 * which runs its one-statement path, its transaction, or both.
 */
@Injectable()
export class PayoutCommands {
  constructor(
    private readonly writer: FencedWriter,
    private readonly instructions: InstructionSigner,
    private readonly receipts: ReceiptCheck,
    @Inject(PAYMENT_CONFIG) private readonly config: PaymentConfig,
  ) {}

  /** P2: claim a payout (docs/payment-resource.md#endpoints). */
  claim(payoutId: string, grant: Grant, body: ClaimRequest): Promise<ClaimResponse> {
    return this.writer.run(claimCommand(payoutId, grant, body));
  }

  /** P6: the payout's rail transitions, recorded by the holder (docs/contract.md). */
  async railOutcome(
    payoutId: string,
    grant: Grant,
    body: RailOutcomeRequest,
    receipt: string | string[] | undefined,
  ): Promise<RailOutcomeResponse> {
    if (body.outcome === 'ACKED' && body.submissionId === undefined) {
      throw new ValidationError([
        { field: 'submissionId', message: 'submissionId is required when outcome is ACKED' },
      ]);
    }
    // What the rail answered needs the proxy's receipt; SUBMITTED and AMBIGUOUS move no money.
    const evidence =
      body.outcome === 'ACKED' || body.outcome === 'REJECTED'
        ? await this.receipts.read(receipt, { ...body, outcome: body.outcome, payoutId, grant })
        : null;
    const sign = (payout: Payout) => this.instructions.sign(payout, grant.token, grant.ownerId);
    return this.writer.run(railOutcomeCommand(payoutId, grant, body, evidence, sign));
  }

  /** P3: the ledger posting of an acked payout, on the rail-proxy's receipt. */
  async post(
    payoutId: string,
    grant: Grant,
    body: PostRequest,
    receipt: string | string[] | undefined,
  ): Promise<PostResponse> {
    const expect = { ...body, outcome: 'ACKED' as const, payoutId, grant };
    const evidence = await this.receipts.read(receipt, expect);
    const shards = this.config.PAYMENT_CLEARING_SHARDS;
    return this.writer.run(postCommand(payoutId, grant, body, evidence, shards));
  }

  /** P8: the reconciler's only way out of RAIL_AMBIGUOUS, on the rail's record as the proxy receipted it. */
  async resolve(
    payoutId: string,
    grant: Grant,
    body: ResolveRequest,
    receipt: string | string[] | undefined,
  ): Promise<ResolveResponse> {
    const expect = { ...body, outcome: body.resolution, payoutId, grant };
    const evidence = await this.receipts.read(receipt, expect);
    return this.writer.run(resolveCommand(payoutId, grant, body, evidence));
  }

  /**
   * P7: operator cancel. The actor recorded is the authenticated caller; a
   * body `operator` naming someone else is kept as a note in the reason
   * (docs/security.md).
   */
  abandon(payoutId: string, asked: AbandonRequest, actor: string): Promise<AbandonResponse> {
    const body: AbandonRequest = {
      operator: actor,
      reason:
        asked.operator === actor
          ? asked.reason
          : `${asked.reason} [noted operator: ${asked.operator}]`.slice(0, REASON_MAX_LENGTH),
    };
    const slaMs = this.config.PAYOUT_AMBIGUOUS_SLA_MS;
    return this.writer.runUnfenced(abandonCommand(payoutId, body, slaMs));
  }
}
