import { applyDecorators, HttpCode, Post } from '@nestjs/common';
import {
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import {
  FENCING_TOKEN_MAX,
  PROOF_BYTES_MAX,
  ValidationError,
  type ValidationFailure,
} from '@dlock/lock-api';
import { ApiContractErrors, ApiOperatorHeader, Operation, schemaRef } from '@dlock/http-contract';
import { int64Text } from '@dlock/http-contract/schema';
import type { FloorRaiseRequest } from './wire';
import { isAccountId } from './payout-protocol';

/**
 * Imported as `@dlock/payout-contract/fence-floor`, by the two apps that serve
 * the route: the package's entry point stays free of Nest's HTTP stack.
 * The operator/reconciler raise of a guard's memory to a floor by account,
 * shared by the account fence (payment-resource) and the rail high-water mark
 * (rail-proxy): docs/operations.md, "Revocation fencing". One request shape
 * and one parse; the notice check and the audit are the generic fence
 * point's (`FencePointService` of @dlock/lock-nest), which both guards also
 * serve on `POST /v1/revocation-notices`.
 */
export class FenceFloorBody implements FloorRaiseRequest {
  @ApiProperty(int64Text('the floor the guard’s memory is raised to: the notice’s floor'))
  @IsString()
  floor!: string;

  // Required, but its absence is a refused proof (403 PROOF_REJECTED, reason `missing`), as a
  // missing grant proof is, not a 400: the checker says so.
  @ApiProperty({
    maxLength: PROOF_BYTES_MAX,
    description:
      'The revocation notice the lock-server signed over this floor (docs/security.md, ' +
      '“Revocation notices”); without a genuine one nothing is raised (403 PROOF_REJECTED)',
  })
  @IsOptional()
  @IsString()
  notice?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'The lock-server revocation behind it' })
  @IsOptional()
  @IsUUID()
  revocationId?: string;

  @ApiPropertyOptional({ minLength: 8, maxLength: 1024 })
  @IsOptional()
  @IsString()
  @Length(8, 1024)
  reason?: string;
}

export interface FloorCommand {
  accountId: string;
  floor: bigint;
  /** The revocation notice as presented: checked by the fence point before anything is raised. */
  notice: string | undefined;
  operator: string;
  revocationId: string | null;
  reason: string | null;
}

const PRINTABLE = /^[\x20-\x7e]+$/;
const FLOOR = /^[1-9][0-9]{0,18}$/;

/**
 * The parts every caller must get right, checked together so one 400 names
 * them all: the account id (payout-protocol rule), a canonical int64 floor,
 * and the X-Operator attribution (no identity layer exists yet).
 */
export function parseFloorRequest(
  accountId: string,
  body: FenceFloorBody,
  operator: unknown,
): FloorCommand {
  const fields: ValidationFailure[] = [];
  if (!isAccountId(accountId)) fields.push({ field: 'accountId', message: 'is not an account id' });
  if (!FLOOR.test(body.floor) || BigInt(body.floor) > FENCING_TOKEN_MAX) {
    fields.push({ field: 'floor', message: 'must be a positive int64 as a canonical decimal' });
  }
  if (typeof operator !== 'string' || operator.length > 64 || !PRINTABLE.test(operator)) {
    fields.push({ field: 'X-Operator', message: 'header is required: 1..64 printable characters' });
  }
  if (fields.length > 0) throw new ValidationError(fields);
  return {
    accountId,
    floor: BigInt(body.floor),
    notice: body.notice,
    operator: operator as string,
    revocationId: body.revocationId?.toLowerCase() ?? null,
    reason: body.reason ?? null,
  };
}

/**
 * The raise by account as a route: `POST <path>` with `:accountId`, X-Operator, 200 with
 * `schema` (raised, or already at or past the floor), its refusals and its policy operation, in
 * that order in the OpenAPI document. The body is {@link FenceFloorBody}, parsed by
 * {@link parseFloorRequest}; the guard's own service raises.
 */
export function FloorRaiseRoute(route: {
  summary: string;
  path: string;
  operation: string;
  schema: string;
  errors: Parameters<typeof ApiContractErrors>;
}): MethodDecorator {
  // Listed top to bottom as they would be stacked on the method; applied bottom up like a stack.
  const stacked = [
    ApiOperation({ summary: route.summary }),
    ApiParam({ name: 'accountId', schema: { type: 'string' } }),
    ApiOperatorHeader(),
    ApiOkResponse({
      description: 'Raised, or already at or past the floor',
      schema: schemaRef(route.schema),
    }),
    ApiContractErrors(...route.errors),
    Post(route.path),
    Operation(route.operation),
    HttpCode(200),
  ];
  return applyDecorators(...stacked.reverse());
}

const NULLABLE_INT64 = { ...int64Text('null when there is no such resource', 0), nullable: true };

/** `{ notice, reason? }`: the key and the floor are the notice's own. */
const FENCE_POINT_BODY = ApiBody({
  schema: {
    type: 'object',
    properties: {
      notice: {
        type: 'string',
        maxLength: PROOF_BYTES_MAX,
        description: 'The revocation notice the lock-server signed (dlock-revocation+jws)',
      },
      reason: { type: 'string', minLength: 8, maxLength: 1024 },
    },
    required: ['notice'],
  },
});

/** The generic answer (`FencePointAnswer` of @dlock/lock-nest). */
const FENCE_POINT_ANSWER = ApiOkResponse({
  description: 'Raised, already at or past the floor, or no such resource',
  schema: {
    type: 'object',
    properties: {
      key: { type: 'string' },
      floor: int64Text('the notice’s floor'),
      result: { type: 'string', enum: ['raised', 'unchanged', 'not_found'] },
      before: NULLABLE_INT64,
      after: NULLABLE_INT64,
    },
    required: ['key', 'floor', 'result', 'before', 'after'],
  },
});

/**
 * The decorators dlock's payout guards put on the generic fence point route
 * (`POST /v1/revocation-notices` of `FencePointModule`, @dlock/lock-nest):
 * its operation for the authorisation policy and its OpenAPI description.
 * The route itself, its parse and its answer are the module's.
 */
export function fencePointRouteDecorators(): MethodDecorator[] {
  return [
    ApiTags('fence-points'),
    ApiOperation({
      summary: 'Raise this guard to a revocation’s floor, on the lock-server’s signed notice',
      description:
        'The generic fence point contract (docs/contract.md, “Fence points”): the key and the ' +
        'floor are the notice’s own; the lock-server presents it before its revoke answers.',
    }),
    FENCE_POINT_BODY,
    FENCE_POINT_ANSWER,
    ApiContractErrors('VALIDATION_FAILED', 'NOT_FOUND', 'PROOF_REJECTED'),
    Operation('fence-points.raise'),
  ];
}
