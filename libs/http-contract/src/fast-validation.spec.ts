import 'reflect-metadata';
import { ValidationPipe, type ArgumentMetadata, type Type } from '@nestjs/common';
import {
  Allow,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { Transform } from 'class-transformer';
import fc from 'fast-check';
import { DlockError } from '@dlock/lock-api';
import { ContractValidationPipe } from './fast-validation';
import { parseRequestBody } from './json';
import { contractValidationOptions, IsInt64Token, IsMinorAmount } from './validation';

// DTOs with the rules the hot routes' bodies use (lock-server, payment-resource, rail-proxy, rail-stub).
class Acquire {
  @IsUUID('all') sessionId!: string;
  @IsOptional() @IsInt() @Min(1000) @Max(60000) ttlMillis?: number;
  @IsOptional() @IsInt() @Min(0) @Max(30000) waitMillis?: number;
}

class Outcome {
  @IsIn(['SUBMITTED', 'ACKED', 'REJECTED', 'AMBIGUOUS']) outcome!: string;
  @IsOptional() @IsUUID() submissionId?: string;
  @IsOptional() @IsString() @Length(1, 128) @Matches(/^[\x20-\x7e]+$/) railReference?: string;
  @IsOptional() @IsString() @Length(1, 512) reason?: string;
}

class Submission {
  @IsUUID() payoutId!: string;
  @IsString() @Matches(/^[A-Za-z0-9._-]{1,64}$/) accountId!: string;
  @IsMinorAmount() amountMinor!: number;
  @IsString() @Matches(/^[A-Z]{3}$/) currency!: string;
  @IsString() @MaxLength(128) beneficiaryRef!: string;
}

class Floor {
  @IsInt64Token() floor!: string;
  @IsOptional() @IsString() reason?: string;
}

/** Not compiled: a conditional that is not IsOptional, and a field without rules. */
class Conditional {
  @ValidateIf((o: Conditional) => o.kind === 'a') @IsString() name?: string;
  @Allow() kind?: string;
}

/** Every field optional, as the release's body and query. */
class Optional {
  @IsOptional() @IsUUID('all') sessionId?: string;
}

class Unruled {
  @IsString() name!: string;
  note?: string;
}

/** Not compiled: class-transformer changes the value before the rules see it. */
class Trimmed {
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 4)
  name!: string;
}

const DTOS: Type<unknown>[] = [Acquire, Outcome, Submission, Floor, Conditional, Unruled, Trimmed];
const FIELDS = [
  'sessionId',
  'ttlMillis',
  'waitMillis',
  'outcome',
  'submissionId',
  'railReference',
  'reason',
  'payoutId',
  'accountId',
  'amountMinor',
  'currency',
  'beneficiaryRef',
  'floor',
  'name',
  'kind',
  'note',
  'extra',
  '__proto__',
  'constructor',
];

/** Written as 2^53 + 1: lossless parsing makes it a bigint. */
const BIG = Symbol('2^53 + 1');

const value = fc.oneof(
  fc.constantFrom(
    '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13',
    'SUBMITTED',
    'ACKED',
    'EUR',
    'eur',
    '',
    'acct-1',
    '12',
    ' abcd ',
    '9223372036854775807',
    '9223372036854775808',
    'a\u0001b',
    'x'.repeat(130),
  ),
  fc.string({ maxLength: 8 }),
  fc.integer({ min: -5, max: 70_000 }),
  fc.constantFrom(0.5, -0, 1e21, BIG, 30000, 60000, 1000),
  fc.boolean(),
  fc.constant(null),
  fc.constant([1]),
  fc.constant({ a: 1 }),
);

/** A body as JSON text: `__proto__` and big integers included, parsed as a request's. */
const body = fc
  .array(fc.tuple(fc.constantFrom(...FIELDS), value), { maxLength: 7 })
  .map(
    (entries) =>
      `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v === BIG ? '9007199254740993' : JSON.stringify(v)}`).join(',')}}`,
  );

const UUID = '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13';
/** Valid bodies of each DTO, to mutate: most runs then exercise the compiled path. */
const VALID: [Type<unknown>, Record<string, unknown>][] = [
  [Acquire, { sessionId: UUID, ttlMillis: 30000, waitMillis: 0 }],
  [Outcome, { outcome: 'ACKED', submissionId: UUID, railReference: 'rr-1', reason: 'why' }],
  [
    Submission,
    { payoutId: UUID, accountId: 'acct-1', amountMinor: 100, currency: 'EUR', beneficiaryRef: 'b' },
  ],
  [Floor, { floor: '12', reason: 'r' }],
  [Trimmed, { name: ' ab ' }],
];

const mutated = fc
  .tuple(
    fc.constantFrom(...VALID),
    fc.array(fc.tuple(fc.constantFrom('drop', 'set'), fc.constantFrom(...FIELDS), value), {
      maxLength: 2,
    }),
  )
  .map(([[dto, valid], edits]) => {
    const entries = new Map(Object.entries(valid));
    for (const [op, key, v] of edits) {
      if (op === 'drop') entries.delete(key);
      else entries.set(key, v);
    }
    const text = `{${[...entries].map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
    return { dto, text };
  });

async function outcome(
  pipe: ValidationPipe,
  text: string,
  dto: Type<unknown>,
  type: 'body' | 'query',
) {
  let input: unknown;
  try {
    input = parseRequestBody(text);
  } catch {
    return 'unparsable';
  }
  if (type === 'query') input = Object.assign(Object.create(null) as object, input);
  const metadata: ArgumentMetadata = { type, metatype: dto, data: undefined };
  try {
    const out = (await pipe.transform(input, metadata)) as object;
    return { ok: out.constructor.name, own: Object.entries(out) };
  } catch (err) {
    if (!(err instanceof DlockError)) throw err;
    return { code: err.code, message: err.message, details: err.details };
  }
}

describe('ContractValidationPipe', () => {
  const stock = new ValidationPipe(contractValidationOptions());
  const fast = new ContractValidationPipe(contractValidationOptions());

  it('answers exactly what the stock ValidationPipe answers, valid or not, body or query', async () => {
    await fc.assert(
      fc.asyncProperty(
        body,
        fc.constantFrom(...DTOS),
        fc.constantFrom('body', 'query'),
        async (text, dto, type) => {
          expect(await outcome(fast, text, dto, type)).toEqual(
            await outcome(stock, text, dto, type),
          );
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('answers what the stock pipe answers for valid bodies and near misses', async () => {
    const spy = jest.spyOn(ValidationPipe.prototype, 'transform');
    let fastCalls = 0;
    await fc.assert(
      fc.asyncProperty(mutated, fc.constantFrom('body', 'query'), async ({ dto, text }, type) => {
        const before = spy.mock.calls.length;
        const mine = await outcome(fast, text, dto, type);
        if (spy.mock.calls.length === before) fastCalls++;
        expect(mine).toEqual(await outcome(stock, text, dto, type));
      }),
      { numRuns: 2000 },
    );
    spy.mockRestore();
    // Most valid bodies and about half the near misses are accepted without the stock pipe.
    expect(fastCalls).toBeGreaterThan(500);
  });

  it('takes the compiled path for a valid body of a plain DTO', async () => {
    const spy = jest.spyOn(ValidationPipe.prototype, 'transform');
    const metadata: ArgumentMetadata = { type: 'body', metatype: Acquire, data: undefined };
    const out = await fast.transform(
      { sessionId: '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13' },
      metadata,
    );
    expect(out).toBeInstanceOf(Acquire);
    expect(spy).not.toHaveBeenCalled();
    await expect(fast.transform({ sessionId: 'nope' }, metadata)).rejects.toThrow(DlockError);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });

  it('answers an absent body or query as the stock pipe does, compiled when all is optional', async () => {
    const spy = jest.spyOn(ValidationPipe.prototype, 'transform');
    for (const dto of [Acquire, Outcome, Floor, Trimmed, Conditional, Unruled]) {
      for (const type of ['body', 'query'] as const) {
        for (const absent of [undefined, null]) {
          const metadata: ArgumentMetadata = { type, metatype: dto, data: undefined };
          const answer = (pipe: ValidationPipe) =>
            pipe.transform(absent, metadata).then(
              (out: object) => ({ ok: out.constructor.name, own: Object.entries(out) }),
              (err: DlockError) => ({ code: err.code, details: err.details }),
            );
          expect(await answer(fast)).toEqual(await answer(stock));
        }
      }
    }
    spy.mockClear();
    // A release's DELETE carries no body: its all-optional DTO needs no stock pipe.
    const out = await fast.transform(undefined, {
      type: 'body',
      metatype: Optional,
      data: undefined,
    });
    expect(out).toBeInstanceOf(Optional);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });

  it('leaves parameters, custom decorators and other options to the stock pipe', async () => {
    expect(await fast.transform('7', { type: 'param', metatype: Number, data: 'n' })).toBe(7);
    const raw = { sessionId: 'x' };
    expect(await fast.transform(raw, { type: 'custom', metatype: Acquire, data: undefined })).toBe(
      raw,
    );
    const lenient = new ContractValidationPipe({
      ...contractValidationOptions(),
      whitelist: false,
    });
    const metadata: ArgumentMetadata = { type: 'body', metatype: Acquire, data: undefined };
    const spy = jest.spyOn(ValidationPipe.prototype, 'transform');
    await lenient.transform({ sessionId: '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13' }, metadata);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });
});
