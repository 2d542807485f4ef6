import { Controller, Get, HttpCode, Logger, Param, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  FENCING_TOKEN_MAX,
  formatFencingToken,
  formatInstant,
  ValidationError,
} from '@dlock/lock-api';
import { ForbiddenError, type VerifiedIdentity } from '@dlock/identity';
import { RevokeService } from '../service/revoke.service';
import { RevocationRecords } from '../service/revocation-records.service';
import { GrantProofs } from '../../locks/service/grant-proofs.service';
import { parseRequestId } from '../../http/lock-server.params';
import { outcomeView, REVOKE_APPROVAL_SCHEMA } from '../../http/lock-server.views';
import {
  ApiContractErrors,
  CallerIdentity,
  INSTANT,
  int64Text,
  Operation,
  recordAuthRefusal,
  wireSchema,
  type AuthenticatedRequest,
} from '@dlock/http-contract';

export const REVOCATIONS_LIMIT_MAX = 500;
const REVOCATIONS_LIMIT_DEFAULT = 100;
const KNOWN = new Set(['afterFloor', 'limit']);

/** Strict query: `afterFloor` a canonical int64 (0 = from the start), `limit` 1..500. */
function parseQuery(query: Record<string, unknown>): { afterFloor: bigint; limit: number } {
  const fields: { field: string; message: string }[] = [];
  for (const name of Object.keys(query)) {
    if (!KNOWN.has(name)) fields.push({ field: name, message: 'is not a known query parameter' });
  }
  const after = query.afterFloor ?? '0';
  let afterFloor = 0n;
  if (
    typeof after !== 'string' ||
    !/^(0|[1-9][0-9]{0,18})$/.test(after) ||
    BigInt(after) > FENCING_TOKEN_MAX
  ) {
    fields.push({ field: 'afterFloor', message: 'must be an int64 >= 0 as a canonical decimal' });
  } else afterFloor = BigInt(after);
  const limitText = query.limit ?? String(REVOCATIONS_LIMIT_DEFAULT);
  let limit = REVOCATIONS_LIMIT_DEFAULT;
  if (
    typeof limitText !== 'string' ||
    !/^[1-9][0-9]{0,2}$/.test(limitText) ||
    Number(limitText) > REVOCATIONS_LIMIT_MAX
  ) {
    fields.push({ field: 'limit', message: `must be an integer 1..${REVOCATIONS_LIMIT_MAX}` });
  } else limit = Number(limitText);
  if (fields.length > 0) throw new ValidationError(fields);
  return { afterFloor, limit };
}

type RevocationsPage = Awaited<ReturnType<RevocationsController['list']>>;

const REVOCATIONS_PAGE_SCHEMA = wireSchema<RevocationsPage>('RevocationsPage', {
  items: {
    type: 'array',
    items: wireSchema<RevocationsPage['items'][number]>('Revocation', {
      revocationId: { type: 'string', format: 'uuid' },
      key: { type: 'string' },
      revokedToken: int64Text('the evicted grant’s token'),
      newTokenFloor: int64Text('every later grant of the key exceeds it'),
      operator: { type: 'string' },
      reason: { type: 'string' },
      revokedAt: INSTANT,
      notice: {
        type: 'string',
        description:
          'The revocation notice over this record’s floor (docs/security.md, “Revocation ' +
          'notices”): what a fence point raises its floor on',
      },
    }),
  },
});

/**
 * The L8 audit records of every key, in floor order, for the reconciler's
 * revocation fencing (docs/reconciler.md), each with the notice this server
 * signs over its floor, so the reconciler can present what a fence point
 * requires. Read-only; the lock-server gives no meaning to any key.
 */
@ApiTags('revocations')
@Controller('v1/revocations')
export class RevocationsController {
  private readonly logger = new Logger('auth');

  constructor(
    private readonly records: RevocationRecords,
    private readonly revocations: RevokeService,
    private readonly proofs: GrantProofs,
  ) {}

  /**
   * The second operator's approval of a two-person force-revoke
   * (docs/security.md): the revoke happens now, answered like L8's 200.
   * The requester itself is 403; a used request 409; a closed window 410.
   */
  @ApiOperation({ summary: 'Approve a two-person force-revoke: the revoke happens now' })
  @ApiParam({ name: 'requestId', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ description: 'Revoked', schema: REVOKE_APPROVAL_SCHEMA })
  @ApiContractErrors(
    'NOT_FOUND',
    'FENCED_OUT',
    'REVOCATION_ALREADY_APPROVED',
    'REVOCATION_REQUEST_EXPIRED',
    'CONTENTION_EXCEEDED',
    'NOT_LEADER',
  )
  @Post(':requestId/approve')
  @Operation('revocations.approve')
  @HttpCode(200)
  async approve(
    @Param('requestId') rawId: string,
    @CallerIdentity() caller: VerifiedIdentity,
    @Req() req: AuthenticatedRequest & Request,
  ) {
    const requestId = parseRequestId(rawId);
    try {
      return {
        ...outcomeView(await this.revocations.approve(requestId, caller.subject)),
        requestId,
      };
    } catch (err) {
      if (err instanceof ForbiddenError)
        recordAuthRefusal(this.logger, req, err, caller.subject, 'policy');
      throw err;
    }
  }

  @ApiOperation({ summary: 'The revocation records of every key, in floor order' })
  @ApiQuery({
    name: 'afterFloor',
    required: false,
    schema: int64Text('only records with a newTokenFloor above this; default 0', 0),
  })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: REVOCATIONS_LIMIT_MAX, default: 100 },
  })
  @ApiOkResponse({ description: 'One page of records', schema: REVOCATIONS_PAGE_SCHEMA })
  @ApiContractErrors('CONTENTION_EXCEEDED', 'NOT_LEADER')
  @Get()
  @Operation('revocations.list')
  async list(@Query() query: Record<string, unknown>) {
    const { afterFloor, limit } = parseQuery(query);
    const items = await this.records.after(afterFloor, limit);
    return {
      items: items.map((r) => ({
        revocationId: r.revocationId,
        key: r.key,
        revokedToken: formatFencingToken(r.revokedToken),
        newTokenFloor: formatFencingToken(r.newTokenFloor),
        operator: r.operator,
        reason: r.reason,
        revokedAt: formatInstant(r.revokedAt),
        // The record keeps the operator who asked; its approval is in its request.
        notice: this.proofs.notice({
          key: r.key,
          floor: r.newTokenFloor,
          revocationId: r.revocationId,
          requestedBy: r.operator,
          approvedBy: null,
        }),
      })),
    };
  }
}
