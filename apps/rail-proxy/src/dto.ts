import { IsOptional, IsString, IsUUID, Matches } from 'class-validator';
import { IsMinorAmount } from '@dlock/http-contract';
import { ACCOUNT_ID_PATTERN, ACCOUNT_ID_RULE } from '@dlock/lock-api';

/** POST /v1/rail/submissions body (C3 §3.5). Headers carry token, owner and key. */
export class SubmissionBody {
  @IsUUID()
  payoutId!: string;

  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: `accountId must be ${ACCOUNT_ID_RULE}` })
  accountId!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be an ISO-4217 code' })
  currency!: string;

  @IsString()
  @Matches(/^[\x20-\x7e]{1,128}$/, {
    message: 'beneficiaryRef must be 1..128 printable ASCII characters',
  })
  beneficiaryRef!: string;

  /** Optional; when absent the proxy derives `po-<payoutId>` (docs/rail.md). */
  @IsOptional()
  @IsString()
  @Matches(/^[\x21-\x7e]{1,128}$/, { message: 'clientRef must be 1..128 visible ASCII characters' })
  clientRef?: string;
}

export class PayoutIdParams {
  @IsUUID()
  payoutId!: string;
}
