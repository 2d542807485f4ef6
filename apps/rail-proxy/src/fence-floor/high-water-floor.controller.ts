import { Body, Controller, HttpCode, Logger, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Counter, register } from 'prom-client';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import {
  FENCING_TOKEN_MAX,
  isAccountId,
  ValidationError,
  type ValidationFailure,
} from '@dlock/lock-api';
import { HighWaterFloorRepository } from './high-water-floor.repository';

const PRINTABLE = /^[\x20-\x7e]+$/;
const FLOOR = /^[1-9][0-9]{0,18}$/;

/** Body of the high-water raise; the attribution is the X-Operator header. */
export class HighWaterFloorBody {
  @IsString()
  floor!: string;

  @IsOptional()
  @IsUUID()
  revocationId?: string;

  @IsOptional()
  @IsString()
  @Length(8, 1024)
  reason?: string;
}

function raisesCounter(): Counter {
  const name = 'fence_floor_raises_total';
  return (
    (register.getSingleMetric(name) as Counter | undefined) ??
    new Counter({
      name,
      help: 'Operator/reconciler high-water floor requests, by whether the mark moved',
      labelNames: ['result'],
    })
  );
}

/** Account id (payout-protocol rule), canonical int64 floor and X-Operator, in one 400. */
function parseFloorRequest(accountId: string, floor: string, operator: unknown) {
  const fields: ValidationFailure[] = [];
  if (!isAccountId(accountId)) fields.push({ field: 'accountId', message: 'is not an account id' });
  if (!FLOOR.test(floor) || BigInt(floor) > FENCING_TOKEN_MAX) {
    fields.push({ field: 'floor', message: 'must be a positive int64 as a canonical decimal' });
  }
  if (typeof operator !== 'string' || operator.length > 64 || !PRINTABLE.test(operator)) {
    fields.push({ field: 'X-Operator', message: 'header is required: 1..64 printable characters' });
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return { accountId, floor: BigInt(floor), operator: operator as string };
}

/**
 * Operator/reconciler only (docs/operations.md, "Revocation fencing"): raises
 * an account's high-water mark so a revoked holder's token is refused before
 * any new holder submits. Idempotent: a floor already passed is a no-op 200.
 */
@Controller('v1/rail/high-water')
export class HighWaterFloorController {
  private readonly logger = new Logger('fence-floor');
  private readonly raises = raisesCounter();

  constructor(private readonly repo: HighWaterFloorRepository) {
    for (const result of ['raised', 'unchanged']) this.raises.inc({ result }, 0);
  }

  @Post(':accountId/floor')
  @HttpCode(200)
  async raise(
    @Param('accountId') rawId: string,
    @Body() body: HighWaterFloorBody,
    @Req() req: Request,
  ) {
    const { accountId, floor, operator } = parseFloorRequest(
      rawId,
      body.floor,
      req.headers['x-operator'],
    );
    const out = await this.repo.raise(accountId, floor);
    this.raises.inc({ result: out.raised ? 'raised' : 'unchanged' });
    const view = {
      accountId,
      floor: floor.toString(),
      highestTokenBefore: out.highestBefore?.toString() ?? null,
      highestTokenAfter: out.highestAfter.toString(),
      raised: out.raised,
    };
    const audit = {
      ...view,
      operator,
      revocationId: body.revocationId?.toLowerCase() ?? null,
      reason: body.reason ?? null,
    };
    if (out.raised) this.logger.warn({ event: 'fence_floor_raised', ...audit }, 'mark raised');
    else this.logger.log({ event: 'fence_floor_unchanged', ...audit }, 'mark already past floor');
    return view;
  }
}
