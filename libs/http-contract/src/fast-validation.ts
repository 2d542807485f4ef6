import {
  ValidationPipe,
  type ArgumentMetadata,
  type Type,
  type ValidationPipeOptions,
} from '@nestjs/common';
import { getMetadataStorage, ValidationTypes, type ValidationArguments } from 'class-validator';
import { TransformationType } from 'class-transformer';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';

// class-transformer ships the storage's types apart from its CommonJS build: typed here, so
// every compilation of this file (npm run build, nest build <app>) needs nothing else.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as {
  defaultMetadataStorage: MetadataStorage;
};

/**
 * The per-request cost of the stock ValidationPipe is mostly machinery, not
 * rules: class-transformer walks the body with reflection, and class-validator
 * looks a DTO's rules up again on every call (scanning every class that has
 * any) before it runs them (bench/reports/stack-cost.md). For a body or query
 * of a DTO whose rules are all plain property checks, the rules are looked up
 * once; a request they all accept gets the same instance the stock pipe would
 * build. Anything else (a failing rule, an unknown or non-primitive property, a
 * DTO with nested, conditional-other-than-optional, async or per-item rules) goes
 * the stock way, so every refusal and its messages are the stock pipe's.
 */

type Constraint = { instance: { validate(value: unknown, args: ValidationArguments): unknown } };
type Condition = (object: object, value: unknown) => boolean;

interface PropertyRules {
  name: string;
  /** IsOptional and its kind: when one says no, the property's rules are skipped. */
  conditions: Condition[];
  rules: { constraints: unknown[]; validators: Constraint[] }[];
}

interface CompiledDto {
  properties: PropertyRules[];
  names: ReadonlySet<string>;
}

/** How many DTO classes are compiled at most (each app has a few dozen); past it, the stock way. */
const COMPILED_MAX = 500;
/** Properties of one DTO the fast path handles; a larger DTO goes the stock way. */
const PROPERTIES_MAX = 64;

const SUPPORTED_TYPES: ReadonlySet<string> = new Set([
  ValidationTypes.CUSTOM_VALIDATION,
  ValidationTypes.CONDITIONAL_VALIDATION,
  ValidationTypes.IS_DEFINED,
]);

/** Nothing on the prototype class-transformer would treat specially (accessors, methods). */
function plainPrototype(dto: Type<unknown>): boolean {
  return Object.getOwnPropertyNames(dto.prototype).every((k) => k === 'constructor');
}

/** No class-transformer decorator (@Type, @Transform, @Expose, @Exclude) changes the copy. */
function plainTransform(dto: Type<unknown>, names: Iterable<string>): boolean {
  const t = defaultMetadataStorage;
  if (t.getStrategy(dto) !== 'none' || t.getExposedMetadatas(dto).length > 0) return false;
  if (t.getExcludedMetadatas(dto).length > 0) return false;
  for (const name of names) {
    if (t.findTypeMetadata(dto, name) !== undefined) return false;
    if (t.findTransformMetadatas(dto, name, TransformationType.PLAIN_TO_CLASS).length > 0) {
      return false;
    }
  }
  return true;
}

type Metadata = ReturnType<
  ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']
>[number];

function supported(m: Metadata): boolean {
  const extra = m as Metadata & { validateIf?: unknown };
  return (
    SUPPORTED_TYPES.has(m.type) &&
    !m.each &&
    m.always !== true &&
    !m.groups?.length &&
    !extra.validateIf
  );
}

/** The DTO's rules as the stock pipe's class-validator call would find them, or null when unsupported. */
function compile(dto: Type<unknown>): CompiledDto | null {
  const storage = getMetadataStorage();
  // As class-validator's own call for an instance: no schema, no groups, `always` off.
  const metadatas = storage.getTargetValidationMetadatas(
    dto,
    undefined as unknown as string,
    false,
    false,
  );
  if (metadatas.length === 0 || !plainPrototype(dto) || !metadatas.every(supported)) return null;
  const byName = new Map<string, PropertyRules>();
  for (const m of metadatas) {
    let p = byName.get(m.propertyName);
    if (p === undefined) {
      p = { name: m.propertyName, conditions: [], rules: [] };
      byName.set(m.propertyName, p);
    }
    if (m.type === ValidationTypes.CONDITIONAL_VALIDATION) {
      p.conditions.push(m.constraints[0] as Condition);
      continue;
    }
    const validators = storage.getTargetValidatorConstraints(
      m.constraintCls,
    ) as unknown as (Constraint & {
      async: boolean;
    })[];
    if (validators.some((v) => v.async)) return null;
    p.rules.push({ constraints: m.constraints, validators });
  }
  if (byName.size > PROPERTIES_MAX || !plainTransform(dto, byName.keys())) return null;
  // A field of the class without a rule is an own property of every instance, which the
  // stock pipe's whitelist refuses on every request: such a DTO goes the stock way.
  if (!Object.keys(new dto() as object).every((k) => byName.has(k))) return null;
  return { properties: [...byName.values()], names: new Set(byName.keys()) };
}

const isPrimitive = (v: unknown) =>
  v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** The instance the stock pipe would return, or undefined when the stock pipe must decide. */
function accept(dto: Type<unknown>, compiled: CompiledDto, value: unknown): object | undefined {
  // No body or query at all (a DELETE): the stock pipe validates an empty object in its place.
  const present = value ?? {};
  if (typeof present !== 'object' || Array.isArray(present)) return undefined;
  const source = present as Record<string, unknown>;
  const keys = Object.keys(source);
  for (const key of keys) {
    if (!compiled.names.has(key) || !isPrimitive(source[key])) return undefined;
  }
  const instance = new dto() as Record<string, unknown>;
  for (const key of keys) instance[key] = source[key];
  for (const p of compiled.properties) {
    const v = instance[p.name];
    if (!p.conditions.every((c) => c(instance, v))) continue;
    for (const rule of p.rules) {
      const args: ValidationArguments = {
        targetName: dto.name,
        property: p.name,
        object: instance,
        value: v,
        constraints: rule.constraints,
      };
      for (const validator of rule.validators) {
        if (validator.instance.validate(v, args) !== true) return undefined;
      }
    }
  }
  return instance;
}

/**
 * The contract's ValidationPipe (contractValidationPipe): same options and
 * outcomes, the common case compiled. Only for `transform: true` with
 * whitelist and forbidNonWhitelisted, which is what the contract uses.
 */
export class ContractValidationPipe extends ValidationPipe {
  private readonly compiled = new Map<Type<unknown>, CompiledDto | null>();
  /** The compiled path matches the stock pipe only under the contract's options. */
  private readonly compiledPath: boolean;

  constructor(options: ValidationPipeOptions = {}) {
    super(options);
    const { transform, whitelist, forbidNonWhitelisted, ...rest } = options;
    const neutral = ['forbidUnknownValues', 'transformOptions', 'exceptionFactory'];
    this.compiledPath =
      transform === true &&
      whitelist === true &&
      forbidNonWhitelisted === true &&
      options.transformOptions?.enableImplicitConversion !== true &&
      Object.keys(rest).every((k) => neutral.includes(k)) &&
      Object.keys(options.transformOptions ?? {}).every((k) => k === 'enableImplicitConversion');
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const dto = metadata.metatype as Type<unknown> | undefined;
    const compilable = metadata.type === 'body' || metadata.type === 'query';
    if (this.compiledPath && compilable && dto && this.toValidate(metadata)) {
      const compiled = this.compiledFor(dto);
      const fast = compiled ? accept(dto, compiled, value) : undefined;
      if (fast !== undefined) return fast;
    }
    return super.transform(value, metadata);
  }

  private compiledFor(dto: Type<unknown>): CompiledDto | null {
    let compiled = this.compiled.get(dto);
    if (compiled === undefined) {
      compiled = compile(dto);
      if (this.compiled.size < COMPILED_MAX) this.compiled.set(dto, compiled);
    }
    return compiled;
  }
}
