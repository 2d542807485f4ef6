import { Body, Controller, Param, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiTags } from '@nestjs/swagger';
import {
  FenceFloorBody,
  FloorRaiseRoute,
  parseFloorRequest,
} from '@dlock/payout-contract/fence-floor';
import type { HighWaterFloorResponse } from '@dlock/payout-contract';
import { HighWaterFloorService } from '../service/high-water-floor.service';

/**
 * The lock-server and reconciler only (docs/operations.md, "Revocation
 * fencing"), with a revocation notice the lock-server signed: raises an
 * account's high-water mark so a revoked holder's token is refused before any
 * new holder submits. Idempotent: a floor already passed is a no-op 200.
 */
@ApiTags('rail')
@Controller('v1/rail/high-water')
export class HighWaterFloorController {
  constructor(private readonly service: HighWaterFloorService) {}

  @FloorRaiseRoute({
    summary: 'Raise an account’s high-water mark to a floor (revocation fencing)',
    path: ':accountId/floor',
    operation: 'high-water.floor',
    schema: 'HighWaterFloorResponse',
    errors: ['PROOF_REJECTED'],
  })
  raise(
    @Param('accountId') rawId: string,
    @Body() body: FenceFloorBody,
    @Req() req: Request,
  ): Promise<HighWaterFloorResponse> {
    return this.service.raise(parseFloorRequest(rawId, body, req.headers['x-operator']));
  }
}
