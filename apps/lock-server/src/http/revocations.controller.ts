import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ApiContractErrors, INSTANT, int64Text, wireSchema } from '@dlock/http-contract';
import {
  FENCING_TOKEN_MAX,
  formatFencingToken,
  formatInstant,
  ValidationError,
} from '@dlock/lock-api';
import { RevocationLog } from '../store/revocation-log.port';

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
    }),
  },
});

/**
 * The L8 audit records of every key, in floor order, for the reconciler's
 * revocation fencing (docs/reconciler.md). Read-only; the lock-server gives
 * no meaning to any key.
 */
@ApiTags('revocations')
@Controller('v1/revocations')
export class RevocationsController {
  constructor(private readonly log: RevocationLog) {}

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
  async list(@Query() query: Record<string, unknown>) {
    const { afterFloor, limit } = parseQuery(query);
    const items = await this.log.list(afterFloor, limit);
    return {
      items: items.map((r) => ({
        revocationId: r.revocationId,
        key: r.key,
        revokedToken: formatFencingToken(r.revokedToken),
        newTokenFloor: formatFencingToken(r.newTokenFloor),
        operator: r.operator,
        reason: r.reason,
        revokedAt: formatInstant(r.revokedAt),
      })),
    };
  }
}
