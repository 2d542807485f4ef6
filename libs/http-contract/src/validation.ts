import {
  applyDecorators,
  type ValidationPipe,
  type ValidationError as ClassValidationError,
} from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, registerDecorator, type ValidationOptions } from 'class-validator';
import { MINOR_AMOUNT } from './schema';
import { FENCING_TOKEN_MAX, ValidationError, type ValidationFailure } from '@dlock/lock-api';
import { ContractValidationPipe } from './fast-validation';

function flatten(errors: ClassValidationError[], prefix = ''): ValidationFailure[] {
  return errors.flatMap((e) => {
    const field = prefix ? `${prefix}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

/**
 * Bodies and queries are validated without coercion: unknown fields and wrong
 * types are 400 VALIDATION_FAILED with details.fields[]. Valid bodies of plain
 * DTOs take a compiled path with the same outcome (fast-validation.ts).
 */
export function contractValidationPipe(): ValidationPipe {
  return new ContractValidationPipe(contractValidationOptions());
}

/** The stock ValidationPipe's options of the contract (also what the compiled path must match). */
export function contractValidationOptions(): ConstructorParameters<typeof ValidationPipe>[0] {
  return {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    exceptionFactory: (errors) => new ValidationError(flatten(errors)),
  };
}

/** An int64 > 0 as a canonical decimal string, a bigint, or a safe JSON integer. */
export function IsInt64Token(options?: ValidationOptions) {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isInt64Token',
      target: target.constructor,
      propertyName,
      options: { message: `${propertyName} must be a positive int64 (decimal string)`, ...options },
      validator: {
        validate(value: unknown) {
          if (typeof value === 'bigint') return value >= 1n && value <= FENCING_TOKEN_MAX;
          if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 1;
          return (
            typeof value === 'string' &&
            /^[1-9][0-9]{0,18}$/.test(value) &&
            BigInt(value) <= FENCING_TOKEN_MAX
          );
        },
      },
    });
}

/**
 * A body's money amount in minor units: a JSON integer from 1 within the safe range,
 * documented (MINOR_AMOUNT) and checked the same on every route.
 */
export function IsMinorAmount(): PropertyDecorator {
  const rule = (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isMinorAmount',
      target: target.constructor,
      propertyName: String(propertyName),
      options: {
        message: `${String(propertyName)} must be an integer >= 1 within the safe range`,
      },
      validator: {
        validate: (value: unknown) =>
          typeof value === 'number' && Number.isSafeInteger(value) && value >= 1,
      },
    });
  return applyDecorators(
    ApiProperty({ ...MINOR_AMOUNT, description: 'Minor units (a JSON integer)' }),
    rule,
  );
}

const CURRENCY_CODE = /^[A-Z]{3}$/;

/** A body's `currency`: an ISO 4217 code, documented and checked the same on every route. */
export function IsCurrencyCode(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ pattern: CURRENCY_CODE.source, example: 'EUR', description: 'ISO 4217' }),
    IsString(),
    Matches(CURRENCY_CODE, { message: 'currency must be an ISO 4217 code such as EUR' }),
  );
}
