import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiContractErrors, ApiOperatorHeader, Operation, schemaRef } from '@dlock/http-contract';
import { FenceFloorBody, parseFloorRequest } from '@dlock/payout-contract/fence-floor';
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

  @ApiOperation({ summary: 'Raise an account’s fence to a floor (revocation fencing)' })
  @ApiParam({ name: 'accountId', schema: { type: 'string' } })
  @ApiOperatorHeader()
  @ApiOkResponse({
    description: 'Raised, or already at or past the floor',
    schema: schemaRef('AccountFloorResponse'),
  })
  @ApiContractErrors('NOT_FOUND', 'PROOF_REJECTED')
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
