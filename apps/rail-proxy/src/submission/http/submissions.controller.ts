import {
  applyDecorators,
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
} from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DlockError, formatFencingToken, formatInstant, ValidationError } from '@dlock/lock-api';
import {
  ApiContractErrors,
  ApiFencedWriteHeaders,
  FencedGrant,
  schemaRef,
  type FencedGrantHeaders,
  Operation,
} from '@dlock/http-contract';
import { PayoutIdParams, SubmissionBody } from './dto';
import {
  idempotencyKeyFor,
  PAYOUT_INSTRUCTION_HEADER,
  railClientRef,
  type RailEvidence,
  type SubmissionView,
  type SubmissionsResponse,
  type SubmitResponse,
} from '@dlock/payout-contract';
import { SubmissionService } from '../service/submission.service';
import { RailEvidenceService } from '../service/rail-evidence.service';
import { ReceiptSigner } from '../service/receipt-signer';
import type { SubmissionRecord } from '../domain/submission.types';

/**
 * R1's route: `POST /v1/rail/submissions` under a grant, policy operation `rail.submit`, 200
 * with the rail's acknowledgement, the grant's headers, the payout instruction it must match
 * (docs/rail.md) and every refusal, in that order in the OpenAPI document.
 */
function FencedRailSubmit(): MethodDecorator {
  // Listed top to bottom as they would be stacked on the method; applied bottom up like a stack.
  const stacked = [
    ApiOperation({ summary: 'Submit a payout to the rail, once, under a grant (R1)' }),
    ApiFencedWriteHeaders(),
    ApiOkResponse({ description: 'The rail acknowledged', schema: schemaRef('SubmitResponse') }),
    ApiContractErrors(
      'FENCED_OUT',
      'DUPLICATE_SUBMISSION',
      'RAIL_AMBIGUOUS',
      'RAIL_UNAVAILABLE',
      'IDEMPOTENCY_CONFLICT',
      'INVALID_TOKEN',
      'PROOF_REJECTED',
      ['VALIDATION_FAILED', 422],
    ),
    ApiHeader({
      name: 'X-Payout-Instruction',
      required: true,
      description:
        'The instruction payment-resource answered RAIL_SUBMITTED with (P6 railInstruction); ' +
        'a submission that differs from it in any field is 403 PROOF_REJECTED (docs/rail.md)',
      schema: { type: 'string' },
    }),
    Post(),
    Operation('rail.submit'),
    HttpCode(200),
  ];
  return applyDecorators(...stacked.reverse());
}

function view(r: SubmissionRecord, railReceipt: string | null): SubmissionView {
  return {
    submissionId: r.submissionId,
    payoutId: r.payoutId,
    accountId: r.accountId,
    presentedToken: formatFencingToken(r.presentedToken),
    ownerId: r.ownerId,
    clientRef: r.clientRef,
    amountMinor: r.amountMinor,
    currency: r.currency,
    outcome: r.outcome,
    railReference: r.railReference,
    errorCode: r.errorCode,
    submittedAt: formatInstant(r.createdAt),
    resolvedAt: r.resolvedAt ? formatInstant(r.resolvedAt) : null,
    railReceipt,
  };
}

@ApiTags('rail')
@Controller('v1/rail/submissions')
export class SubmissionsController {
  constructor(
    private readonly service: SubmissionService,
    private readonly evidenceOf: RailEvidenceService,
    private readonly receipts: ReceiptSigner,
  ) {}

  /** R1 — submit a payout to the rail (docs/rail.md). */
  @FencedRailSubmit()
  submit(
    @FencedGrant() grant: FencedGrantHeaders,
    @Headers(PAYOUT_INSTRUCTION_HEADER) instruction: string | string[] | undefined,
    @Body() body: SubmissionBody,
  ): Promise<SubmitResponse> {
    const payoutId = body.payoutId.toLowerCase();
    const { token, proof, ownerId, idempotencyKey, traceId, deadline } = grant;
    // Only the payout's own stable key (docs/contract.md, "Headers"): a fresh key per
    // retry would open a new scope, and a new audit row, for every stale attempt.
    if (idempotencyKey !== idempotencyKeyFor(payoutId)) {
      throw new ValidationError([
        { field: 'X-Idempotency-Key', message: `must be the payout's key, payout-<payoutId>` },
      ]);
    }
    return this.service.submit({
      presentedToken: token,
      grantProof: proof,
      instruction,
      ownerId,
      idempotencyKey,
      payoutId,
      accountId: body.accountId,
      amountMinor: body.amountMinor,
      currency: body.currency,
      beneficiaryRef: body.beneficiaryRef,
      clientRef: railClientRef(payoutId),
      traceId,
      deadline,
    });
  }

  /** R2 (advisory, never a correctness input): the proxy's record(s) of the payout. */
  @ApiOperation({ summary: 'The proxy’s record of a payout’s submissions (advisory, R2)' })
  @ApiOkResponse({ description: 'The records', schema: schemaRef('SubmissionsResponse') })
  @ApiContractErrors('NOT_FOUND')
  @Get(':payoutId')
  @Operation('rail.read')
  async records(@Param() params: PayoutIdParams): Promise<SubmissionsResponse> {
    const records = await this.service.recordsOf(params.payoutId);
    if (records.length === 0) {
      throw new DlockError('NOT_FOUND', 'no rail submission recorded for this payout');
    }
    const submissions = records.map((r) => view(r, this.receipts.ofRecord(r)));
    return { payoutId: params.payoutId.toLowerCase(), submissions };
  }

  /** R3: the rail's record of the payout and the receipt it earns (docs/rail.md, "Receipts"). */
  @ApiOperation({ summary: 'The rail’s record of a payout, with the receipt it earns (R3)' })
  @ApiOkResponse({ description: 'The record', schema: schemaRef('RailEvidence') })
  @ApiContractErrors('RAIL_UNAVAILABLE')
  @Get(':payoutId/evidence')
  @Operation('rail.evidence')
  evidence(@Param() params: PayoutIdParams): Promise<RailEvidence> {
    return this.evidenceOf.evidence(params.payoutId);
  }
}
