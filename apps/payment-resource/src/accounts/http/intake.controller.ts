import { Body, Controller, Param, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ApiCreatedResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import {
  ApiContractErrors,
  ApiIdempotencyKeyHeader,
  ClientIdempotencyKeyParam,
  Operation,
  schemaRef,
} from '@dlock/http-contract';
import type { CreatedAccount, CreatedPayout, DepositResponse } from '@dlock/payout-contract';
import { IntakeService, type IntakeAnswer } from '../service/intake.service';
import { CreateAccountBody, CreatePayoutBody, DepositBody } from './intake.dto';
import { accountIdParam } from '../../http/route.params';

const REPLAYED = {
  'Idempotent-Replayed': {
    description: '"true" when this is the stored answer to an earlier identical request',
    schema: { type: 'string', enum: ['true'] },
  },
};

/** The answer as first given; a replay says so in `Idempotent-Replayed`. */
function send<T>(res: Response, answer: IntakeAnswer<T>): T {
  res.status(answer.statusCode);
  if (answer.replayed) res.setHeader('Idempotent-Replayed', 'true');
  return answer.body;
}

/** The payouts API (docs/payment-resource.md, "Creating accounts, deposits and payouts"). */
@ApiTags('intake')
@ApiIdempotencyKeyHeader('Idempotency-Key')
@Controller('v1')
export class IntakeController {
  constructor(private readonly intake: IntakeService) {}

  @ApiOperation({ summary: 'Open a customer account' })
  @ApiCreatedResponse({
    description: 'Opened',
    schema: schemaRef('CreatedAccount'),
    headers: REPLAYED,
  })
  @ApiContractErrors('IDEMPOTENCY_CONFLICT')
  @Post('accounts')
  @Operation('accounts.create')
  async openAccount(
    @ClientIdempotencyKeyParam() key: string,
    @Body() body: CreateAccountBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CreatedAccount> {
    return send(res, await this.intake.openAccount(key, body));
  }

  @ApiOperation({ summary: 'Deposit into an account' })
  @ApiParam({ name: 'accountId', schema: { type: 'string' } })
  @ApiCreatedResponse({
    description: 'Deposited',
    schema: schemaRef('DepositResponse'),
    headers: REPLAYED,
  })
  @ApiContractErrors('IDEMPOTENCY_CONFLICT', 'NOT_FOUND')
  @Post('accounts/:accountId/deposits')
  @Operation('accounts.deposit')
  async deposit(
    @Param('accountId') accountId: string,
    @ClientIdempotencyKeyParam() key: string,
    @Body() body: DepositBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DepositResponse> {
    return send(res, await this.intake.deposit(key, accountIdParam(accountId), body));
  }

  @ApiOperation({ summary: 'Create a payout (PENDING until a worker takes it)' })
  @ApiCreatedResponse({
    description: 'Created',
    schema: schemaRef('CreatedPayout'),
    headers: REPLAYED,
  })
  @ApiContractErrors('IDEMPOTENCY_CONFLICT', 'NOT_FOUND')
  @Post('payouts')
  @Operation('payouts.create')
  async createPayout(
    @ClientIdempotencyKeyParam() key: string,
    @Body() body: CreatePayoutBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CreatedPayout> {
    return send(res, await this.intake.createPayout(key, body));
  }
}
