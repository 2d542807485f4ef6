import { IsIn, IsOptional, IsString, Length, MaxLength } from 'class-validator';

/**
 * The console's own bodies check only their shape: the rules (reason of at
 * least 8 characters, token syntax, evidence) are the services', so a
 * refusal the operator sees is the service's own error.
 */
export class RevokeActionBody {
  @IsString()
  @Length(1, 512)
  key!: string;

  @IsString()
  @MaxLength(4096)
  reason!: string;

  @IsOptional()
  @IsString()
  @MaxLength(32)
  expectedToken?: string;
}

export class ApproveActionBody {
  /** The lock-server's request id (it answers 400 for one that is no UUID). */
  @IsString()
  @Length(1, 64)
  requestId!: string;
}

export class AbandonActionBody {
  @IsString()
  @Length(1, 64)
  payoutId!: string;

  @IsString()
  @MaxLength(4096)
  reason!: string;
}

export class ResolveActionBody {
  @IsString()
  @Length(1, 64)
  payoutId!: string;

  @IsIn(['ACKED', 'NOT_FOUND'])
  resolution!: 'ACKED' | 'NOT_FOUND';

  @IsString()
  @MaxLength(4096)
  evidence!: string;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  railReference?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  submissionId?: string;
}
