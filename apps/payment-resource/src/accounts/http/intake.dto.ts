import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length, Matches } from 'class-validator';
import {
  ACCOUNT_ID_PATTERN,
  type CreateAccountRequest,
  type CreatePayoutRequest,
  type DepositRequest,
} from '@dlock/payout-contract';
import { IsCurrencyCode, IsMinorAmount } from '@dlock/http-contract';

const PRINTABLE = /^[\x20-\x7e]+$/;

/** POST /v1/accounts. */
export class CreateAccountBody implements CreateAccountRequest {
  @IsCurrencyCode()
  currency!: string;

  @ApiPropertyOptional({
    pattern: ACCOUNT_ID_PATTERN.source,
    description: 'Chosen by the caller; the system names the account when absent',
  })
  @IsOptional()
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'accountId must be 1..64 of [A-Za-z0-9._-]' })
  accountId?: string;
}

/** POST /v1/accounts/{accountId}/deposits. */
export class DepositBody implements DepositRequest {
  @IsMinorAmount()
  amountMinor!: number;

  @IsCurrencyCode()
  currency!: string;
}

/** POST /v1/payouts. */
export class CreatePayoutBody implements CreatePayoutRequest {
  @ApiProperty({ pattern: ACCOUNT_ID_PATTERN.source })
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'accountId must be 1..64 of [A-Za-z0-9._-]' })
  accountId!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsCurrencyCode()
  currency!: string;

  @ApiProperty({ minLength: 1, maxLength: 128, pattern: PRINTABLE.source })
  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  beneficiaryRef!: string;
}
