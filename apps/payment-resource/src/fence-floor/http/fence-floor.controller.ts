import { Body, Controller, Param, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiTags } from '@nestjs/swagger';
import {
  FenceFloorBody,
  FloorRaiseRoute,
  parseFloorRequest,
} from '@dlock/payout-contract/fence-floor';
import type { AccountFloorResponse } from '@dlock/payout-contract';
import { FenceFloorService } from '../service/fence-floor.service';

/**
 * The lock-server and reconciler only (docs/operations.md, "Revocation
 * fencing"), with a revocation notice the lock-server signed: never called by
 * a worker path, and no caller's word sets a floor.
 */
@ApiTags('accounts')
@Controller('v1/accounts')
export class FenceFloorController {
  constructor(private readonly service: FenceFloorService) {}

  @FloorRaiseRoute({
    summary: 'Raise an account’s fence to a floor (revocation fencing)',
    path: ':accountId/fence-floor',
    operation: 'accounts.fence-floor',
    schema: 'AccountFloorResponse',
    errors: ['NOT_FOUND', 'PROOF_REJECTED'],
  })
  raise(
    @Param('accountId') rawId: string,
    @Body() body: FenceFloorBody,
    @Req() req: Request,
  ): Promise<AccountFloorResponse> {
    return this.service.raise(parseFloorRequest(rawId, body, req.headers['x-operator']));
  }
}
