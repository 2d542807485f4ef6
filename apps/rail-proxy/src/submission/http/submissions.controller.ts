import { Body, Controller, Get, Headers, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DlockError, formatFencingToken, formatInstant, ValidationError } from '@dlock/lock-api';
import {
  ApiContractErrors,
  FencedGrant,
  schemaRef,
  type FencedGrantHeaders,
  Operation,
} from '@dlock/http-contract';
import { PayoutIdParams, SubmissionBody } from './submission.dto';
import { FencedRailSubmit } from './fenced-rail-submit.decorator';
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
import { ReceiptSigner } from '../service/receipt-signer.service';
import type { SubmissionRecord } from '../domain/submission.types';

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
