import { Logger } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUUID, Length } from 'class-validator';
import { counter } from '@dlock/metrics';
import type { Counter } from 'prom-client';
import { FENCING_TOKEN_MAX, ValidationError, type ValidationFailure } from '@dlock/lock-api';
import { int64Text } from '@dlock/http-contract/schema';
import type { FloorRaiseRequest } from './wire';
import { isAccountId } from './payout-protocol';

/**
 * Imported as `@dlock/payout-contract/fence-floor`, by the two apps that serve
 * the route: the package's entry point stays free of Nest's HTTP stack.
 * The operator/reconciler raise of a guard's memory to a floor, shared by the
 * account fence (payment-resource) and the rail high-water mark (rail-proxy):
 * docs/operations.md, "Revocation fencing". One request shape, one parse, one
 * audit trail, so the two guards cannot drift apart.
 */
export class FenceFloorBody implements FloorRaiseRequest {
  @ApiProperty(int64Text('the floor the guard’s memory is raised to'))
  @IsString()
  floor!: string;

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
    operator: operator as string,
    revocationId: body.revocationId?.toLowerCase() ?? null,
    reason: body.reason ?? null,
  };
}

const RAISES_METRIC = 'fence_floor_raises_total';

/** `fence_floor_raised` (warn) or `fence_floor_unchanged`, and the counter by result. */
export class FenceFloorAudit {
  private readonly logger: Logger;
  private readonly raises: Counter;

  constructor(guard: string) {
    this.logger = new Logger(guard);
    this.raises = counter({
      name: RAISES_METRIC,
      help: 'Operator/reconciler floor raises of this guard, by whether its value moved',
      labelNames: ['result'],
    });
    for (const result of ['raised', 'unchanged']) this.raises.inc({ result }, 0);
  }

  record(cmd: FloorCommand, raised: boolean, values: Record<string, string | null>): void {
    this.raises.inc({ result: raised ? 'raised' : 'unchanged' });
    const audit = {
      accountId: cmd.accountId,
      floor: cmd.floor.toString(),
      ...values,
      operator: cmd.operator,
      revocationId: cmd.revocationId,
      reason: cmd.reason,
    };
    if (raised)
      this.logger.warn({ event: 'fence_floor_raised', ...audit }, 'guard raised to floor');
    else this.logger.log({ event: 'fence_floor_unchanged', ...audit }, 'guard already past floor');
  }
}
