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
import { IsMinorAmount } from '@dlock/http-contract';
import { FAILURE_MODES, SCRIPTED_FATES, type FailureMode, type ScriptedFate } from './fault-plan';

export const CLIENT_REF_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** POST /submit: what a third-party rail would accept. No token, no idempotency key. */
export class SubmitBody {
  @IsString()
  @Matches(CLIENT_REF_PATTERN, { message: 'clientRef must be 1..128 visible ASCII characters' })
  clientRef!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO-4217 code' })
  currency!: string;
}

/** S2 GET /lookup?clientRef= */
export class LookupQuery {
  @IsString()
  @Length(1, 128)
  @Matches(CLIENT_REF_PATTERN, { message: 'clientRef must be 1..128 visible ASCII characters' })
  clientRef!: string;
}

const MS_MAX = 600_000;

/** POST /admin/faults: every field optional; what is sent replaces the current value. */
export class FaultsPatch {
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MS_MAX)
  latencyMs?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  failureRate?: number;

  @IsOptional()
  @IsIn(FAILURE_MODES)
  failureMode?: FailureMode;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  failureAcceptRate?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MS_MAX)
  holdMs?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  declineRate?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  duplicateAckRate?: number;

  /** Restarts the seeded sequence. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(2 ** 32 - 1)
  seed?: number;

  /** Replaces the queue of explicit fates consumed before the rates apply. */
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10_000)
  @IsIn(SCRIPTED_FATES, { each: true })
  script?: ScriptedFate[];
}
