import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
} from 'class-validator';
import { IsCurrencyCode, IsMinorAmount } from '@dlock/http-contract';
import {
  FAILURE_MODES,
  SCRIPTED_FATES,
  type FailureMode,
  type ScriptedFate,
} from '../domain/fault-plan.rules';
import type { TransferRequest } from '../domain/transfer-request.types';

export const CLIENT_REF_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** POST /submit: what a third-party rail would accept. No token, no idempotency key. */
export class SubmitBody implements TransferRequest {
  @ApiProperty({ pattern: CLIENT_REF_PATTERN.source, description: 'The caller’s reference' })
  @IsString()
  @Matches(CLIENT_REF_PATTERN, { message: 'clientRef must be 1..128 visible ASCII characters' })
  clientRef!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsCurrencyCode()
  currency!: string;
}

/** S2 GET /lookup?clientRef= */
export class LookupQuery {
  @ApiProperty({ pattern: CLIENT_REF_PATTERN.source })
  @IsString()
  @Length(1, 128)
  @Matches(CLIENT_REF_PATTERN, { message: 'clientRef must be 1..128 visible ASCII characters' })
  clientRef!: string;
}

const MS_MAX = 600_000;
const RATE = { type: 'number', minimum: 0, maximum: 1 } as const;

/** POST /admin/faults: every field optional; what is sent replaces the current value. */
export class FaultsPatch {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MS_MAX })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MS_MAX)
  latencyMs?: number;

  @ApiPropertyOptional(RATE)
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  failureRate?: number;

  @ApiPropertyOptional({ enum: FAILURE_MODES })
  @IsOptional()
  @IsIn(FAILURE_MODES)
  failureMode?: FailureMode;

  @ApiPropertyOptional(RATE)
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  failureAcceptRate?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MS_MAX })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MS_MAX)
  holdMs?: number;

  @ApiPropertyOptional(RATE)
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  declineRate?: number;

  @ApiPropertyOptional(RATE)
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  duplicateAckRate?: number;

  @ApiPropertyOptional(RATE)
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  slowRate?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MS_MAX })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MS_MAX)
  slowLatencyMs?: number;

  /** Restarts the seeded sequence. */
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 2 ** 32 - 1 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(2 ** 32 - 1)
  seed?: number;

  /** Replaces the queue of explicit fates consumed before the rates apply. */
  @ApiPropertyOptional({ type: 'array', items: { type: 'string', enum: [...SCRIPTED_FATES] } })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10_000)
  @IsIn(SCRIPTED_FATES, { each: true })
  script?: ScriptedFate[];
}
