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
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt64Token, int64Text } from '@dlock/http-contract';

const PRINTABLE = /^[\x20-\x7e]+$/;
export const OPERATOR_MAX_LENGTH = 128;
export const REASON_MIN_LENGTH = 8;
export const REASON_MAX_LENGTH = 1024;

/** L1 body (every field optional: ownerId may come from X-Owner-Id). */
export class OpenSessionBody {
  @ApiPropertyOptional({
    description: 'The owner; or X-Owner-Id (both present must agree); must be the token subject',
    minLength: 1,
    maxLength: OWNER_ID_MAX_LENGTH,
    pattern: PRINTABLE.source,
  })
  @IsOptional()
  @IsString()
  @Length(1, OWNER_ID_MAX_LENGTH)
  @Matches(PRINTABLE, { message: 'ownerId must be printable ASCII' })
  ownerId?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: SESSION_TTL_MIN_MS,
    maximum: SESSION_TTL_MAX_MS,
    description: 'Session TTL; the server default when absent, clamped to its maximum',
  })
  @IsOptional()
  @IsInt()
  @Min(SESSION_TTL_MIN_MS)
  @Max(SESSION_TTL_MAX_MS)
  ttlMillis?: number;
}

/** L5, renew a lock (docs/lock-server.md): the body. */
export class RenewBody {
  @ApiProperty({ format: 'uuid', description: 'An open session of the caller' })
  @IsUUID('all')
  sessionId!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: LOCK_TTL_MIN_MS,
    maximum: LOCK_TTL_MAX_MS,
    description: 'Lease TTL; the server default when absent',
  })
  @IsOptional()
  @IsInt()
  @Min(LOCK_TTL_MIN_MS)
  @Max(LOCK_TTL_MAX_MS)
  ttlMillis?: number;
}

/** L4, acquire a lock (docs/lock-server.md): the renew body and how long to wait. */
export class AcquireBody extends RenewBody {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: WAIT_MAX_MS,
    description:
      'How long the server may wait for the key (bounded by the caller deadline); 0 = try once',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(WAIT_MAX_MS)
  waitMillis?: number;
}

/** L6 body (sessionId may also come as a query parameter; attribution only). */
export class ReleaseBody {
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'Attribution only, never part of the predicate',
  })
  @IsOptional()
  @IsUUID('all')
  sessionId?: string;
}

export class ReleaseQuery {
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'Attribution only, never part of the predicate',
  })
  @IsOptional()
  @IsUUID('all')
  sessionId?: string;
}

/** L8 body. */
export class RevokeBody {
  @ApiProperty({ minLength: 1, maxLength: OPERATOR_MAX_LENGTH, pattern: PRINTABLE.source })
  @IsString()
  @Length(1, OPERATOR_MAX_LENGTH)
  @Matches(PRINTABLE, { message: 'operator must be printable ASCII' })
  operator!: string;

  @ApiProperty({ minLength: REASON_MIN_LENGTH, maxLength: REASON_MAX_LENGTH })
  @IsString()
  @MinLength(REASON_MIN_LENGTH)
  @MaxLength(REASON_MAX_LENGTH)
  reason!: string;

  @ApiPropertyOptional(
    int64Text('compare-and-set guard: revoke only if this is the live grant’s token'),
  )
  @IsOptional()
  @IsInt64Token()
  expectedToken?: string | number | bigint;
}
