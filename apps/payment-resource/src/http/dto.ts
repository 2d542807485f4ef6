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
  @IsIn(['PENDING', 'CLAIMED'])
  expectedState!: ClaimRequest['expectedState'];
}

/** P3 body. */
export class PostBody implements PostRequest {
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference!: string;

  @IsUUID()
  submissionId!: string;

  @IsIn(['ACKED'])
  railOutcome!: 'ACKED';
}

/** P6 body (DECISIONS §4). */
export class RailOutcomeBody implements RailOutcomeRequest {
  @IsIn(['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'])
  outcome!: RailOutcomeKind;

  @IsOptional()
  @IsUUID()
  submissionId?: string;

  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference?: string;

  @IsOptional()
  @IsString()
  @Length(1, 512)
  reason?: string;
}

/** P7 body: an operator's decision, attributed and explained. */
export class AbandonBody implements AbandonRequest {
  @IsString()
  @Length(1, 64)
  @Matches(PRINTABLE)
  operator!: string;

  @IsString()
  @Length(8, 1024)
  reason!: string;
}

/** P8 body: the reconciler's verdict and the rail evidence behind it. */
export class ResolveBody implements ResolveRequest {
  @IsIn(['ACKED', 'NOT_FOUND'])
  resolution!: Resolution;

  @IsString()
  @Length(1, 1024)
  evidence!: string;

  @IsOptional()
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  railReference?: string;

  @IsOptional()
  @IsUUID()
  submissionId?: string;
}
