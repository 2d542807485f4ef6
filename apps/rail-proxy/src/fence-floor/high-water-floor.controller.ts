import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import {
  FENCING_TOKEN_MAX,
  isAccountId,
  ValidationError,
  type ValidationFailure,
} from '@dlock/lock-api';
import { HighWaterFloorService } from './high-water-floor.service';

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
  constructor(private readonly service: HighWaterFloorService) {}

  @Post(':accountId/floor')
  @HttpCode(200)
  raise(@Param('accountId') rawId: string, @Body() body: HighWaterFloorBody, @Req() req: Request) {
    const parsed = parseFloorRequest(rawId, body.floor, req.headers['x-operator']);
    return this.service.raise({
      ...parsed,
      revocationId: body.revocationId?.toLowerCase() ?? null,
      reason: body.reason ?? null,
    });
  }
}
