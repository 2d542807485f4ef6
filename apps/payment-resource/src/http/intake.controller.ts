import { Body, Controller, Param, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ClientIdempotencyKeyParam, Operation } from '@dlock/http-contract';
import type { CreatedAccount, CreatedPayout, DepositResponse } from '@dlock/payout-contract';
import { IntakeService, type IntakeAnswer } from '../service/intake.service';
import { CreateAccountBody, CreatePayoutBody, DepositBody } from './intake.dto';
import { accountIdParam } from './params';

/** The answer as first given; a replay says so in `Idempotent-Replayed`. */
function send<T>(res: Response, answer: IntakeAnswer<T>): T {
  res.status(answer.statusCode);
  if (answer.replayed) res.setHeader('Idempotent-Replayed', 'true');
  return answer.body;
}

/** The payouts API (docs/payment-resource.md, "Creating accounts, deposits and payouts"). */
@Controller('v1')
export class IntakeController {
  constructor(private readonly intake: IntakeService) {}

  @Post('accounts')
  @Operation('accounts.create')
  async openAccount(
    @ClientIdempotencyKeyParam() key: string,
    @Body() body: CreateAccountBody,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CreatedAccount> {
    return send(res, await this.intake.openAccount(key, body));
  }

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
