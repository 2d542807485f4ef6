import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import type { FencingToken } from '@dlock/lock-api';
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
  FencingTokenParam,
  IdempotencyKeyParam,
  OwnerIdParam,
  RequestDeadlineParam,
  TraceIdParam,
  type RequestDeadline,
  Operation,
} from '@dlock/http-contract';
import { PayoutCommands, type Grant } from '../service/payout-commands.service';
import { PayoutQueries } from '../service/payout-queries.service';
import { AbandonBody, ClaimBody, PostBody, RailOutcomeBody, ResolveBody } from './dto';
import { parseListQuery, payoutIdParam } from './params';

function grant(
  token: FencingToken,
  ownerId: string,
  idempotencyKey: string,
  traceId: string,
  deadline: RequestDeadline | undefined,
): Grant {
  return { token, ownerId, idempotencyKey, traceId, deadline };
}

/** C3 §3.4 P1–P4 and DECISIONS §4 P6–P8. Parses and maps; the services hold the rules. */
@Controller('v1/payouts')
export class PayoutsController {
  constructor(
    private readonly commands: PayoutCommands,
    private readonly queries: PayoutQueries,
  ) {}

  /** P1 (advisory). */
  @Get()
  @Operation('payouts.list')
  list(@Query() query: Record<string, unknown>): Promise<PayoutPage> {
    return this.queries.list(parseListQuery(query));
  }

  /** P4 (advisory). */
  @Get(':payoutId')
  @Operation('payouts.read')
  get(@Param('payoutId') payoutId: string): Promise<PayoutDetail> {
    return this.queries.get(payoutIdParam(payoutId));
  }

  /** P2. */
  @Post(':payoutId/claim')
  @Operation('payouts.claim')
  @HttpCode(200)
  claim(
    @Param('payoutId') payoutId: string,
    @FencingTokenParam() token: FencingToken,
    @OwnerIdParam() ownerId: string,
    @IdempotencyKeyParam() key: string,
    @TraceIdParam() traceId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Body() body: ClaimBody,
  ): Promise<ClaimResponse> {
    return this.commands.claim(
      payoutIdParam(payoutId),
      grant(token, ownerId, key, traceId, deadline),
      body,
    );
  }

  /** P3. */
  @Post(':payoutId/post')
  @Operation('payouts.post')
  @HttpCode(200)
  post(
    @Param('payoutId') payoutId: string,
    @FencingTokenParam() token: FencingToken,
    @OwnerIdParam() ownerId: string,
    @IdempotencyKeyParam() key: string,
    @TraceIdParam() traceId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Body() body: PostBody,
  ): Promise<PostResponse> {
    return this.commands.post(
      payoutIdParam(payoutId),
      grant(token, ownerId, key, traceId, deadline),
      body,
    );
  }

  /** P6. */
  @Post(':payoutId/rail-outcome')
  @Operation('payouts.rail-outcome')
  @HttpCode(200)
  railOutcome(
    @Param('payoutId') payoutId: string,
    @FencingTokenParam() token: FencingToken,
    @OwnerIdParam() ownerId: string,
    @IdempotencyKeyParam() key: string,
    @TraceIdParam() traceId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Body() body: RailOutcomeBody,
  ): Promise<RailOutcomeResponse> {
    return this.commands.railOutcome(
      payoutIdParam(payoutId),
      grant(token, ownerId, key, traceId, deadline),
      body,
    );
  }

  /** P7: operator action, no token. */
  @Post(':payoutId/abandon')
  @Operation('payouts.abandon')
  @HttpCode(200)
  abandon(
    @Param('payoutId') payoutId: string,
    @Body() body: AbandonBody,
  ): Promise<AbandonResponse> {
    return this.commands.abandon(payoutIdParam(payoutId), body);
  }

  /** P8. */
  @Post(':payoutId/resolve')
  @Operation('payouts.resolve')
  @HttpCode(200)
  resolve(
    @Param('payoutId') payoutId: string,
    @FencingTokenParam() token: FencingToken,
    @OwnerIdParam() ownerId: string,
    @IdempotencyKeyParam() key: string,
    @TraceIdParam() traceId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Body() body: ResolveBody,
  ): Promise<ResolveResponse> {
    return this.commands.resolve(
      payoutIdParam(payoutId),
      grant(token, ownerId, key, traceId, deadline),
      body,
    );
  }
}
