import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import {
  ApiAcceptedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { LOCK_KEY_PATTERN, parseFencingToken, type FencingToken } from '@dlock/lock-api';
import type { VerifiedIdentity } from '@dlock/identity';
import {
  ApiContractErrors,
  ApiFencingTokenHeader,
  ApiGrantProofHeader,
  ApiOwnerIdHeader,
  CallerIdentity,
  FencingTokenParam,
  GrantProofParam,
  OwnerIdParam,
  RequestDeadlineParam,
  boundedWaitMs,
  type RequestDeadline,
  Operation,
} from '@dlock/http-contract';
import { LockService } from '../service/lock.service';
import { RevokeService } from '../../revocations/service/revoke.service';
import {
  AcquireBody,
  ReleaseBody,
  ReleaseQuery,
  RenewBody,
  RevokeBody,
} from '../../http/lock-server.dto';
import { parseLockKey } from '../../http/lock-server.params';
import { OwnerUpkeepRoute } from '../../http/owner-upkeep.decorator';
import {
  grantView,
  LOCK_GRANT_SCHEMA,
  LOCK_INFO_SCHEMA,
  lockInfoView,
  outcomeView,
  REVOCATION_REQUEST_SCHEMA,
  revocationRequestView,
  REVOKE_OUTCOME_SCHEMA,
} from '../../http/lock-server.views';

/** Kept back from the caller's deadline when bounding a server-side wait. */
const ACQUIRE_DEADLINE_MARGIN_MS = 200;

const KEY_PARAM = ApiParam({
  name: 'key',
  schema: { type: 'string', pattern: LOCK_KEY_PATTERN.source },
  description: 'The lock key, e.g. payout:{accountId}',
});

/** L4-L8. Controllers parse and map; the rules live in LockService. */
@ApiTags('locks')
@Controller('v1/locks')
export class LocksController {
  constructor(
    private readonly locks: LockService,
    private readonly revocations: RevokeService,
  ) {}

  /** L4 — acquire a lock (docs/lock-server.md#endpoints). */
  @ApiOperation({
    summary: 'Acquire a lock: a new grant with a fencing token above every earlier one',
  })
  @KEY_PARAM
  @ApiOwnerIdHeader()
  @ApiOkResponse({ description: 'Granted', schema: LOCK_GRANT_SCHEMA })
  @ApiContractErrors(
    'LOCK_CONTENDED',
    'CONTENTION_EXCEEDED',
    'SESSION_UNKNOWN',
    'SESSION_EXPIRED',
    'NOT_LEADER',
    'FORBIDDEN',
  )
  @Post(':key/acquire')
  @Operation('locks.acquire', { lockKeyParam: 'key' })
  @HttpCode(200)
  async acquire(
    @Param('key') rawKey: string,
    @Body() body: AcquireBody,
    @OwnerIdParam() ownerId: string,
    @RequestDeadlineParam() deadline: RequestDeadline | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const key = parseLockKey(rawKey);
    const command = {
      key,
      sessionId: body.sessionId.toLowerCase(),
      ownerId,
      ttlMillis: body.ttlMillis ?? undefined,
      // The wait ends while the caller still listens: a grant nobody hears holds the key idle.
      waitMillis: body.waitMillis
        ? boundedWaitMs(body.waitMillis, deadline, ACQUIRE_DEADLINE_MARGIN_MS)
        : undefined,
    };
    // Only a server-side wait can outlive its caller; a plain attempt needs no
    // abort wiring (it is the hot path: an AbortController per request costs).
    if (!command.waitMillis) return grantView(await this.locks.acquire(command));
    // A caller that hangs up stops its server-side wait.
    const gone = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) gone.abort();
    };
    res.once('close', onClose);
    try {
      return grantView(await this.locks.acquire({ ...command, signal: gone.signal }));
    } finally {
      res.off('close', onClose);
    }
  }

  /** L5: same grant, later expiry; the token never changes. */
  @ApiOperation({ summary: 'Renew a grant: later expiry, same token' })
  @KEY_PARAM
  @ApiFencingTokenHeader()
  @ApiOwnerIdHeader()
  @ApiOkResponse({ description: 'Renewed', schema: LOCK_GRANT_SCHEMA })
  @ApiContractErrors(
    'LOCK_LOST',
    'INVALID_TOKEN',
    'SESSION_UNKNOWN',
    'SESSION_EXPIRED',
    'CONTENTION_EXCEEDED',
    'NOT_LEADER',
    'FORBIDDEN',
  )
  @Post(':key/renew')
  @Operation('locks.renew')
  @HttpCode(200)
  async renew(
    @Param('key') rawKey: string,
    @FencingTokenParam() token: FencingToken,
    @Body() body: RenewBody,
    @OwnerIdParam() ownerId: string,
  ) {
    const key = parseLockKey(rawKey);
    const grant = await this.locks.renew(
      ownerId,
      key,
      body.sessionId.toLowerCase(),
      token,
      body.ttlMillis ?? undefined,
    );
    return grantView(grant);
  }

  /**
   * L6: compare-and-delete on (key, token), by the grant's owner, who proves
   * it with the grant proof; sessionId (body or query) is attribution only.
   */
  @OwnerUpkeepRoute({
    summary: 'Release a grant (compare-and-delete on key and token)',
    target: [KEY_PARAM, ApiFencingTokenHeader(), ApiGrantProofHeader()],
    answer: { delete: ':key', description: 'Released' },
    operation: 'locks.release',
    errors: ['LOCK_LOST', 'INVALID_TOKEN', 'NOT_LEADER', 'PROOF_REJECTED'],
  })
  async release(
    @Param('key') rawKey: string,
    @FencingTokenParam() token: FencingToken,
    @Body() _body: ReleaseBody,
    @Query() _query: ReleaseQuery,
    @OwnerIdParam() ownerId: string,
    @GrantProofParam() proof: string | string[] | undefined,
  ) {
    await this.locks.release(ownerId, parseLockKey(rawKey), token, proof);
  }

  /** L7 (advisory only, FR-07). */
  @ApiOperation({ summary: 'Inspect a lock (advisory: never decide safety from it)' })
  @KEY_PARAM
  @ApiOkResponse({ description: 'The lock as last seen', schema: LOCK_INFO_SCHEMA })
  @ApiContractErrors('NOT_FOUND', 'CONTENTION_EXCEEDED', 'NOT_LEADER')
  @Get(':key')
  @Operation('locks.inspect')
  async inspect(@Param('key') rawKey: string, @CallerIdentity() caller: VerifiedIdentity) {
    return lockInfoView(await this.locks.inspect(parseLockKey(rawKey), caller.subject));
  }

  /**
   * L8: operator force-revoke. The policy says who may (docs/security.md); the
   * body's `operator` is the name recorded with the revocation. Under a
   * two-person policy this only files the request: 202 with its id.
   */
  @ApiOperation({ summary: 'Force-revoke the live grant and raise the key’s token floor' })
  @KEY_PARAM
  @ApiOkResponse({ description: 'Revoked', schema: REVOKE_OUTCOME_SCHEMA })
  @ApiAcceptedResponse({
    description: 'Two-person policy: request filed; a second operator approves it',
    schema: REVOCATION_REQUEST_SCHEMA,
  })
  @ApiContractErrors('NOT_FOUND', 'FENCED_OUT', 'CONTENTION_EXCEEDED', 'NOT_LEADER')
  @Post(':key/revoke')
  @Operation('locks.revoke')
  @HttpCode(200)
  async revoke(
    @Param('key') rawKey: string,
    @Body() body: RevokeBody,
    @CallerIdentity() caller: VerifiedIdentity,
    @Res({ passthrough: true }) res: Response,
  ) {
    const key = parseLockKey(rawKey);
    const result = await this.revocations.revoke(
      {
        key,
        operator: body.operator,
        reason: body.reason,
        expectedToken:
          body.expectedToken === undefined
            ? undefined
            : parseFencingToken(body.expectedToken, 'expectedToken'),
      },
      caller.subject,
    );
    if (result.kind === 'revoked') return outcomeView(result.outcome);
    res.status(202);
    return revocationRequestView(result.request);
  }
}
