import { IsOptional, IsString, Length, Matches } from 'class-validator';
import {
  ACCOUNT_ID_PATTERN,
  type CreateAccountRequest,
  type CreatePayoutRequest,
  type DepositRequest,
} from '@dlock/payout-contract';
import { IsMinorAmount } from '@dlock/http-contract';

const CURRENCY = /^[A-Z]{3}$/;
const PRINTABLE = /^[\x20-\x7e]+$/;

/** POST /v1/accounts. */
export class CreateAccountBody implements CreateAccountRequest {
  @IsString()
  @Matches(CURRENCY, { message: 'currency must be an ISO 4217 code such as EUR' })
  currency!: string;

  @IsOptional()
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'accountId must be 1..64 of [A-Za-z0-9._-]' })
  accountId?: string;
}

/** POST /v1/accounts/{accountId}/deposits. */
export class DepositBody implements DepositRequest {
  @IsMinorAmount()
  amountMinor!: number;

  @IsString()
  @Matches(CURRENCY, { message: 'currency must be an ISO 4217 code such as EUR' })
  currency!: string;
}

/** POST /v1/payouts. */
export class CreatePayoutBody implements CreatePayoutRequest {
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: 'accountId must be 1..64 of [A-Za-z0-9._-]' })
  accountId!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsString()
  @Matches(CURRENCY, { message: 'currency must be an ISO 4217 code such as EUR' })
  currency!: string;

  @IsString()
  @Length(1, 128)
  @Matches(PRINTABLE)
  beneficiaryRef!: string;
}
