import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { FenceFloorBody, parseFloorRequest, Operation } from '@dlock/http-contract';
import type { AccountFloorResponse } from '@dlock/payout-contract';
import { FenceFloorService } from './fence-floor.service';

/**
 * Operator/reconciler only (docs/operations.md, "Revocation fencing"): never
 * called by a worker path.
 */
@Controller('v1/accounts')
export class FenceFloorController {
  constructor(private readonly service: FenceFloorService) {}

  @Post(':accountId/fence-floor')
  @Operation('accounts.fence-floor')
  @HttpCode(200)
  raise(
    @Param('accountId') rawId: string,
    @Body() body: FenceFloorBody,
    @Req() req: Request,
  ): Promise<AccountFloorResponse> {
    return this.service.raise(parseFloorRequest(rawId, body, req.headers['x-operator']));
  }
}
