import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsString,
  IsUUID,
  Matches,
  registerDecorator,
  ValidateIf,
  type ValidationArguments,
} from 'class-validator';
import { IsCurrencyCode, IsMinorAmount } from '@dlock/http-contract';
import {
  ACCOUNT_ID_PATTERN,
  ACCOUNT_ID_RULE,
  railClientRef,
  type SubmitRequest,
} from '@dlock/payout-contract';

/** POST /v1/rail/submissions body (docs/rail.md). Headers carry token, owner and key. */
export class SubmissionBody implements SubmitRequest {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  payoutId!: string;

  @ApiProperty({ pattern: ACCOUNT_ID_PATTERN.source })
  @IsString()
  @Matches(ACCOUNT_ID_PATTERN, { message: `accountId must be ${ACCOUNT_ID_RULE}` })
  accountId!: string;

  @IsMinorAmount()
  amountMinor!: number;

  @IsCurrencyCode()
  currency!: string;

  @ApiProperty({ pattern: '^[ -~]{1,128}$' })
  @IsString()
  @Matches(/^[\x20-\x7e]{1,128}$/, {
    message: 'beneficiaryRef must be 1..128 printable ASCII characters',
  })
  beneficiaryRef!: string;

  /**
   * The rail reference is the system's: derived from payoutId, never chosen by
   * the caller. Best left out; if present it must be exactly the derived one
   * (docs/rail.md, "Client reference").
   */
  @ApiPropertyOptional({
    description: 'Derived by the proxy (po-<payoutId, lower case>); best omitted',
  })
  @ValidateIf((_body, value) => value !== undefined) // null names a reference too: refused
  @IsDerivedClientRef()
  clientRef?: string;
}

function IsDerivedClientRef() {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isDerivedClientRef',
      target: target.constructor,
      propertyName,
      options: {
        message:
          `${propertyName} is derived from payoutId by the proxy (po-<payoutId, lower case>); ` +
          'omit it',
      },
      validator: {
        validate: (value: unknown, args: ValidationArguments) =>
          typeof value === 'string' && value === derivedRef(args.object),
      },
    });
}

function derivedRef(body: object): string | null {
  const payoutId = (body as { payoutId?: unknown }).payoutId;
  return typeof payoutId === 'string' ? railClientRef(payoutId) : null;
}

export class PayoutIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  payoutId!: string;
}
