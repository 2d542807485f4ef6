import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, IsUUID, Length, Matches } from 'class-validator';
import type {
  AbandonRequest,
  ClaimRequest,
  PostRequest,
  RailOutcomeKind,
  RailOutcomeRequest,
  Resolution,
  ResolveRequest,
} from '@dlock/payout-contract';

const PRINTABLE = /^[\x20-\x7e]+$/;

/** P2 body. */
export class ClaimBody implements ClaimRequest {
  @ApiProperty({
    enum: ['PENDING', 'CLAIMED'],
    description: 'PENDING, or CLAIMED for the recovery re-claim',
  })
  @IsIn(['PENDING', 'CLAIMED'])
  expectedState!: ClaimRequest['expectedState'];
}

/** P3 body. */
export class PostBody implements PostRequest {
  @ApiProperty({ minLength: 1, maxLength: 128, pattern: PRINTABLE.source })
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference!: string;

  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  submissionId!: string;

  @ApiProperty({ enum: ['ACKED'] })
  @IsIn(['ACKED'])
  railOutcome!: 'ACKED';
}

/** P6 body (docs/contract.md). */
export class RailOutcomeBody implements RailOutcomeRequest {
  @ApiProperty({ enum: ['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'] })
  @IsIn(['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'])
  outcome!: RailOutcomeKind;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  submissionId?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 128, pattern: PRINTABLE.source })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 512 })
  @IsOptional()
  @IsString()
  @Length(1, 512)
  reason?: string;
}

/** P7 body: an operator's decision, attributed and explained. */
export class AbandonBody implements AbandonRequest {
  @ApiProperty({ minLength: 1, maxLength: 64, pattern: PRINTABLE.source })
  @IsString()
  @Length(1, 64)
  @Matches(PRINTABLE)
  operator!: string;

  @ApiProperty({ minLength: 8, maxLength: 1024 })
  @IsString()
  @Length(8, 1024)
  reason!: string;
}

/** P8 body: the reconciler's verdict and the rail evidence behind it. */
export class ResolveBody implements ResolveRequest {
  @ApiProperty({ enum: ['ACKED', 'NOT_FOUND'], description: 'What the rail’s record shows' })
  @IsIn(['ACKED', 'NOT_FOUND'])
  resolution!: Resolution;

  @ApiProperty({ minLength: 1, maxLength: 1024, description: 'The rail evidence behind it' })
  @IsString()
  @Length(1, 1024)
  evidence!: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 128, pattern: PRINTABLE.source })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference?: string;

  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  submissionId?: string;
}
