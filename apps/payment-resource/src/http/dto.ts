import { IsIn, IsOptional, IsString, IsUUID, Length, Matches } from 'class-validator';

const PRINTABLE = /^[\x20-\x7e]+$/;

/** P2 body. */
export class ClaimBody {
  @IsIn(['PENDING', 'CLAIMED'])
  expectedState!: 'PENDING' | 'CLAIMED';
}

/** P3 body. */
export class PostBody {
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
export class RailOutcomeBody {
  @IsIn(['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS'])
  outcome!: 'SUBMITTED' | 'ACKED' | 'REJECTED' | 'AMBIGUOUS';

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
export class AbandonBody {
  @IsString()
  @Length(1, 64)
  @Matches(PRINTABLE)
  operator!: string;

  @IsString()
  @Length(8, 1024)
  reason!: string;
}

/** P8 body: the reconciler's verdict and the rail evidence behind it. */
export class ResolveBody {
  @IsIn(['ACKED', 'NOT_FOUND'])
  resolution!: 'ACKED' | 'NOT_FOUND';

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
