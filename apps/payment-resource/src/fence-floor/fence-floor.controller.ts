import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import {
  FENCING_TOKEN_MAX,
  isAccountId,
  ValidationError,
  type ValidationFailure,
} from '@dlock/lock-api';
import { FenceFloorService } from './fence-floor.service';

const PRINTABLE = /^[\x20-\x7e]+$/;
const FLOOR = /^[1-9][0-9]{0,18}$/;

/** Body of the fence-floor raise; the attribution is the X-Operator header. */
export class FenceFloorBody {
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

/**
 * The parts every caller must get right, checked together so one 400 names
 * them all: the account id (payout-protocol rule), a canonical int64 floor,
 * and the X-Operator attribution (no identity layer exists yet).
 */
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
 * Operator/reconciler only (docs/operations.md, "Revocation fencing"): never
 * called by a worker; the NetworkPolicy keeps workers off it.
 */
@Controller('v1/accounts')
export class FenceFloorController {
  constructor(private readonly service: FenceFloorService) {}

  @Post(':accountId/fence-floor')
  @HttpCode(200)
  raise(@Param('accountId') rawId: string, @Body() body: FenceFloorBody, @Req() req: Request) {
    const parsed = parseFloorRequest(rawId, body.floor, req.headers['x-operator']);
    return this.service.raise({
      ...parsed,
      revocationId: body.revocationId?.toLowerCase() ?? null,
      reason: body.reason ?? null,
    });
  }
}
