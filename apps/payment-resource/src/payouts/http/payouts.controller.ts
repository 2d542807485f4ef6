import {
  applyDecorators,
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import {
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { VerifiedIdentity } from '@dlock/identity';
import { PAYOUT_STATES, RAIL_RECEIPT_HEADER } from '@dlock/payout-contract';
import type {
  AbandonResponse,
  ClaimResponse,
  PayoutDetail,
  PayoutPage,
  PostResponse,
  RailOutcomeResponse,
  ResolveResponse,
} from '@dlock/payout-contract';
import {
  ApiContractErrors,
  ApiFencedWriteHeaders,
  CallerIdentity,
  FencedGrant,
  schemaRef,
  type FencedGrantHeaders,
  Operation,
} from '@dlock/http-contract';
import { PayoutCommands } from '../service/payout-commands.service';
import { PayoutQueries } from '../service/payout-queries.service';
import { AbandonBody, ClaimBody, PostBody, RailOutcomeBody, ResolveBody } from './payouts.dto';
import {
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  parseListQuery,
  payoutIdParam,
} from '../../http/route.params';

const PAYOUT_PARAM = ApiParam({ name: 'payoutId', schema: { type: 'string', format: 'uuid' } });

/** What every fenced write can answer besides its 200 (docs/payment-resource.md, step 5). */
const FENCED_WRITE_ERRORS = [
  'FENCED_OUT',
  'PAYOUT_NOT_CLAIMABLE',
  'IDEMPOTENCY_CONFLICT',
  'INVALID_TOKEN',
  'NOT_FOUND',
] as const;

/**
 * One fenced write on a payout: `POST /v1/payouts/:payoutId/<action>`, policy
 * operation `payouts.<action>`, 200 with the `ok` schema, the grant's headers
 * and the fenced-write errors, in that order in the OpenAPI document.
 */
function FencedPayoutWrite(route: {
  action: 'claim' | 'post' | 'rail-outcome' | 'resolve';
  summary: string;
  ok: { description: string; schema: string };
  /** Answers of this write only, listed where they stand among the shared ones. */
  errors?: Parameters<typeof ApiContractErrors>;
  /** When the write records a rail answer: which outcomes need the proxy's receipt. */
  receipt?: string;
}): MethodDecorator {
  const errors = route.errors ?? [...FENCED_WRITE_ERRORS, 'PROOF_REJECTED'];
  const receipt = route.receipt
    ? [
        ApiHeader({
          name: 'X-Rail-Receipt',
          required: false,
          description:
            `The rail-proxy's signed receipt of the rail's answer, required ${route.receipt}; ` +
            'missing, forged or not matching the request it is 403 PROOF_REJECTED (docs/rail.md, "Receipts")',
          schema: { type: 'string' },
        }),
      ]
    : [];
  // Listed top to bottom as they would be stacked on the method; applied bottom up like a stack.
  const stacked = [
    ApiOperation({ summary: route.summary }),
    PAYOUT_PARAM,
    ApiFencedWriteHeaders(),
    ...receipt,
    ApiOkResponse({ description: route.ok.description, schema: schemaRef(route.ok.schema) }),
    ApiContractErrors(...errors),
    Post(`:payoutId/${route.action}`),
    Operation(`payouts.${route.action}`),
    HttpCode(200),
  ];
  return applyDecorators(...stacked.reverse());
}

/** docs/payment-resource.md P1–P4 and docs/contract.md P6–P8. Parses and maps; the services hold the rules. */
@ApiTags('payouts')
@Controller('v1/payouts')
export class PayoutsController {
  constructor(
    private readonly commands: PayoutCommands,
    private readonly queries: PayoutQueries,
  ) {}

  /** P1 (advisory). */
  @ApiOperation({ summary: 'List payouts in one state (advisory)' })
  @ApiQuery({ name: 'state', required: true, enum: [...PAYOUT_STATES] })
  @ApiQuery({ name: 'accountId', required: false, schema: { type: 'string' } })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT },
  })
  @ApiQuery({ name: 'cursor', required: false, schema: { type: 'string' }, description: 'opaque' })
  @ApiOkResponse({ description: 'One page', schema: schemaRef('PayoutPage') })
  @Get()
  @Operation('payouts.list')
  list(@Query() query: Record<string, unknown>): Promise<PayoutPage> {
    return this.queries.list(parseListQuery(query));
  }

  /** P4 (advisory). */
  @ApiOperation({ summary: 'A payout and its rail records (advisory)' })
  @PAYOUT_PARAM
  @ApiOkResponse({ description: 'The payout', schema: schemaRef('PayoutDetail') })
  @ApiContractErrors('NOT_FOUND')
  @Get(':payoutId')
  @Operation('payouts.read')
  get(@Param('payoutId') payoutId: string): Promise<PayoutDetail> {
    return this.queries.get(payoutIdParam(payoutId));
  }

  /** P2 — claim a payout (docs/payment-resource.md#endpoints). */
  @FencedPayoutWrite({
    action: 'claim',
    summary: 'Claim a payout under a grant (advances the account fence)',
    ok: { description: 'Claimed', schema: 'ClaimResponse' },
    errors: [...FENCED_WRITE_ERRORS, 'INSUFFICIENT_FUNDS', 'PROOF_REJECTED'],
  })
  claim(
    @Param('payoutId') payoutId: string,
    @FencedGrant() grant: FencedGrantHeaders,
    @Body() body: ClaimBody,
  ): Promise<ClaimResponse> {
    return this.commands.claim(payoutIdParam(payoutId), grant, body);
  }

  /** P3 — post to the ledger (docs/payment-resource.md#endpoints). */
  @FencedPayoutWrite({
    action: 'post',
    summary: 'Post an acknowledged payout to the ledger',
    ok: { description: 'Posted', schema: 'PostResponse' },
    receipt: 'always (an ACKED receipt)',
  })
  post(
    @Param('payoutId') payoutId: string,
    @FencedGrant() grant: FencedGrantHeaders,
    @Body() body: PostBody,
    @Headers(RAIL_RECEIPT_HEADER) receipt: string | string[] | undefined,
  ): Promise<PostResponse> {
    return this.commands.post(payoutIdParam(payoutId), grant, body, receipt);
  }

  /** P6 — record a rail outcome (docs/contract.md). */
  @FencedPayoutWrite({
    action: 'rail-outcome',
    summary: 'Record what the rail answered for the payout',
    ok: { description: 'Recorded', schema: 'RailOutcomeResponse' },
    receipt: 'for ACKED and REJECTED',
  })
  railOutcome(
    @Param('payoutId') payoutId: string,
    @FencedGrant() grant: FencedGrantHeaders,
    @Body() body: RailOutcomeBody,
    @Headers(RAIL_RECEIPT_HEADER) receipt: string | string[] | undefined,
  ): Promise<RailOutcomeResponse> {
    return this.commands.railOutcome(payoutIdParam(payoutId), grant, body, receipt);
  }

  /** P7: operator action, no token. */
  @ApiOperation({ summary: 'Abandon a payout (operator decision, no token)' })
  @PAYOUT_PARAM
  @ApiOkResponse({ description: 'Abandoned', schema: schemaRef('AbandonResponse') })
  @ApiContractErrors('PAYOUT_NOT_CLAIMABLE', 'NOT_FOUND')
  @Post(':payoutId/abandon')
  @Operation('payouts.abandon')
  @HttpCode(200)
  abandon(
    @Param('payoutId') payoutId: string,
    @Body() body: AbandonBody,
    @CallerIdentity() caller: VerifiedIdentity,
  ): Promise<AbandonResponse> {
    return this.commands.abandon(payoutIdParam(payoutId), body, caller.subject);
  }

  /** P8 — resolve an ambiguous payout (docs/contract.md). */
  @FencedPayoutWrite({
    action: 'resolve',
    summary: 'Resolve an ambiguous payout from the rail’s record',
    ok: { description: 'Resolved', schema: 'ResolveResponse' },
    receipt: 'always (from R3, the proxy’s evidence)',
  })
  resolve(
    @Param('payoutId') payoutId: string,
    @FencedGrant() grant: FencedGrantHeaders,
    @Body() body: ResolveBody,
    @Headers(RAIL_RECEIPT_HEADER) receipt: string | string[] | undefined,
  ): Promise<ResolveResponse> {
    return this.commands.resolve(payoutIdParam(payoutId), grant, body, receipt);
  }
}
