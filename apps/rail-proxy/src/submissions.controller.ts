import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DlockError, formatFencingToken, formatInstant, type FencingToken } from '@dlock/lock-api';
import {
  ApiContractErrors,
  ApiFencedWriteHeaders,
  FencingTokenParam,
  IdempotencyKeyParam,
  OwnerIdParam,
  RequestDeadlineParam,
  TraceIdParam,
  schemaRef,
  type RequestDeadline,
} from '@dlock/http-contract';
import { PayoutIdParams, SubmissionBody } from './dto';
import {
  railClientRef,
  type SubmissionView,
  type SubmissionsResponse,
  type SubmitResponse,
} from '@dlock/payout-contract';
import { SubmissionService } from './submission.service';
import type { SubmissionRecord } from './submission.types';

function view(r: SubmissionRecord): SubmissionView {
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
  };
}

@ApiTags('rail')
@Controller('v1/rail/submissions')
export class SubmissionsController {
  constructor(private readonly service: SubmissionService) {}

  @ApiOperation({ summary: 'Submit a payout to the rail, once, under a grant (R1)' })
  @ApiFencedWriteHeaders()
  @ApiOkResponse({ description: 'The rail acknowledged', schema: schemaRef('SubmitResponse') })
  @ApiContractErrors(
    'FENCED_OUT',
    'DUPLICATE_SUBMISSION',
    'RAIL_AMBIGUOUS',
    'RAIL_UNAVAILABLE',
    'IDEMPOTENCY_CONFLICT',
    'INVALID_TOKEN',
    ['VALIDATION_FAILED', 422],
  )
  @Post()
  @HttpCode(200)
  submit(
    @FencingTokenParam() token: FencingToken,
    @OwnerIdParam() ownerId: string,
    @IdempotencyKeyParam() idempotencyKey: string,
    @TraceIdParam() traceId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Body() body: SubmissionBody,
  ): Promise<SubmitResponse> {
    const payoutId = body.payoutId.toLowerCase();
    return this.service.submit({
      presentedToken: token,
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
  async records(@Param() params: PayoutIdParams): Promise<SubmissionsResponse> {
    const records = await this.service.recordsOf(params.payoutId);
    if (records.length === 0) {
      throw new DlockError('NOT_FOUND', 'no rail submission recorded for this payout');
    }
    return { payoutId: params.payoutId.toLowerCase(), submissions: records.map(view) };
  }
}
