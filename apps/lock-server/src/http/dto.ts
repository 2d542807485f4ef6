import {
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  OWNER_ID_MAX_LENGTH,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
  WAIT_MAX_MS,
} from '@dlock/lock-api';
import { IsInt64Token } from '@dlock/http-contract';

const PRINTABLE = /^[\x20-\x7e]+$/;
export const OPERATOR_MAX_LENGTH = 128;
export const REASON_MIN_LENGTH = 8;
export const REASON_MAX_LENGTH = 1024;

/** L1 body (every field optional: ownerId may come from X-Owner-Id). */
export class OpenSessionBody {
  @IsOptional()
  @IsString()
  @Length(1, OWNER_ID_MAX_LENGTH)
  @Matches(PRINTABLE, { message: 'ownerId must be printable ASCII' })
  ownerId?: string;

  @IsOptional()
  @IsInt()
  @Min(SESSION_TTL_MIN_MS)
  @Max(SESSION_TTL_MAX_MS)
  ttlMillis?: number;
}

/** L4 body. */
export class AcquireBody {
  @IsUUID('all')
  sessionId!: string;

  @IsOptional()
  @IsInt()
  @Min(LOCK_TTL_MIN_MS)
  @Max(LOCK_TTL_MAX_MS)
  ttlMillis?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(WAIT_MAX_MS)
  waitMillis?: number;
}

/** L5 body. */
export class RenewBody {
  @IsUUID('all')
  sessionId!: string;

  @IsOptional()
  @IsInt()
  @Min(LOCK_TTL_MIN_MS)
  @Max(LOCK_TTL_MAX_MS)
  ttlMillis?: number;
}

/** L6 body (sessionId may also come as a query parameter; attribution only). */
export class ReleaseBody {
  @IsOptional()
  @IsUUID('all')
  sessionId?: string;
}

export class ReleaseQuery {
  @IsOptional()
  @IsUUID('all')
  sessionId?: string;
}

/** L8 body. */
export class RevokeBody {
  @IsString()
  @Length(1, OPERATOR_MAX_LENGTH)
  @Matches(PRINTABLE, { message: 'operator must be printable ASCII' })
  operator!: string;

  @IsString()
  @MinLength(REASON_MIN_LENGTH)
  @MaxLength(REASON_MAX_LENGTH)
  reason!: string;

  @IsOptional()
  @IsInt64Token()
  expectedToken?: string | number | bigint;
}
