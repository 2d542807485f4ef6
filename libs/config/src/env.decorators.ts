import { Expose, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  type ValidationArguments,
} from 'class-validator';

/*
 * Property decorators of a validated environment class (docs/operations.md,
 * "Configuration"). Each one reads the variable of the property's name: an
 * unset or empty variable takes the default, a value is parsed (never coerced:
 * "80a" stays a string and fails), and the first failing rule names the
 * variable. validateEnv() applies them.
 */

/**
 * The decorators in order on one property, as Nest's applyDecorators does for a property: its
 * own copy, so that an environment class loads no Nest (@dlock/config/env, docs/architecture.md).
 */
function applyDecorators(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, key) => {
    for (const decorate of decorators) decorate(target, key);
  };
}

type Blank = undefined | '';
const isBlank = (raw: unknown): raw is Blank => raw === undefined || raw === '';
const got = (args: ValidationArguments) => `got "${String(args.value)}"`;

/** Reads the variable (also when it is absent from the source) and parses it. */
function read(parse: (raw: string) => unknown, fallback?: unknown): PropertyDecorator {
  return applyDecorators(
    Expose(),
    Transform(({ value }: { value: unknown }) =>
      isBlank(value) ? fallback : typeof value === 'string' ? parse(value) : value,
    ),
  );
}

/** Required unless it has a default; optional ones skip the rules when unset. */
function presence(fallback: unknown, optional: boolean, required = 'is required') {
  if (optional) return IsOptional();
  return fallback === undefined ? IsDefined({ message: required }) : applyDecorators();
}

function bounds(min?: number, max?: number): PropertyDecorator[] {
  const out: PropertyDecorator[] = [];
  if (min !== undefined) out.push(Min(min, { message: `must be >= ${min}` }));
  if (max !== undefined) out.push(Max(max, { message: `must be <= ${max}` }));
  return out;
}

export interface IntOptions {
  default?: number;
  min?: number;
  max?: number;
  /** Unset means undefined: the app's config code derives the value from other variables. */
  optional?: boolean;
}

/** A whole number in decimal digits, within [min, max]. */
export function EnvInt(opts: IntOptions = {}): PropertyDecorator {
  return applyDecorators(
    read((raw) => (/^-?\d+$/.test(raw) ? Number(raw) : raw), opts.default),
    presence(opts.default, opts.optional === true),
    IsInt({ message: (args) => `must be an integer, ${got(args)}` }),
    ValidateBy({
      name: 'isSafeInteger',
      validator: {
        validate: (value) => Number.isSafeInteger(value),
        defaultMessage: () => 'is out of range',
      },
    }),
    ...bounds(opts.min, opts.max),
  );
}

/** A decimal number (e.g. a rate or a margin), within [min, max]. */
export function EnvNumber(opts: { default?: number; min?: number; max?: number } = {}) {
  return applyDecorators(
    read((raw) => (/^-?(\d+\.?\d*|\.\d+)$/.test(raw) ? Number(raw) : raw), opts.default),
    presence(opts.default, false),
    IsNumber({}, { message: (args) => `must be a number, ${got(args)}` }),
    ...bounds(opts.min, opts.max),
  );
}

const BOOLEANS: Record<string, boolean> = { true: true, '1': true, false: false, '0': false };

/** true/1 or false/0. */
export function EnvBool(opts: { default: boolean }): PropertyDecorator {
  return applyDecorators(
    read((raw) => BOOLEANS[raw] ?? raw, opts.default),
    IsBoolean({ message: (args) => `must be true or false, ${got(args)}` }),
  );
}

export interface StringOptions {
  default?: string;
  maxLength?: number;
  pattern?: RegExp;
  optional?: boolean;
}

/** Free text, bounded in length and optionally in shape. */
export function EnvString(opts: StringOptions = {}): PropertyDecorator {
  const rules: PropertyDecorator[] = [IsString()];
  if (opts.maxLength !== undefined) {
    rules.push(
      MaxLength(opts.maxLength, { message: `must be at most ${opts.maxLength} characters` }),
    );
  }
  if (opts.pattern)
    rules.push(Matches(opts.pattern, { message: `must match ${String(opts.pattern)}` }));
  return applyDecorators(
    read((raw) => raw, opts.default),
    presence(opts.default, opts.optional === true),
    ...rules,
  );
}

/**
 * The address a service listens on (BIND_HOST): loopback unless told otherwise,
 * so a laptop's `npm start` is not reachable from its network. Containers set
 * 0.0.0.0 (k8s, docker-compose.yml; docs/security.md, "Hardening").
 */
export function EnvBindHost(): PropertyDecorator {
  return EnvString({ default: '127.0.0.1', maxLength: 255, pattern: /^[0-9A-Za-z.:-]+$/ });
}

/** One of a fixed list of words. */
export function EnvOneOf(values: readonly string[], opts: { default?: string } = {}) {
  const list = values.join(', ');
  return applyDecorators(
    read((raw) => raw, opts.default),
    presence(opts.default, false, `is required (one of ${list})`),
    IsIn(values as string[], { message: (args) => `must be one of ${list}, ${got(args)}` }),
  );
}

/** pino's levels: what every app's LOG_LEVEL may be (each app's variable table in docs/). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** An app's LOG_LEVEL: one of LOG_LEVELS, `info` when unset. */
export function EnvLogLevel(): PropertyDecorator {
  return EnvOneOf(LOG_LEVELS, { default: 'info' });
}

function parsesAsUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

const isUrl = ValidateBy({
  name: 'isEnvUrl',
  validator: { validate: parsesAsUrl, defaultMessage: (args) => `must be a URL, ${got(args!)}` },
});

/** Any URL; trailing slashes dropped so paths can be appended. */
export function EnvUrl(opts: { default?: string; optional?: boolean } = {}): PropertyDecorator {
  return applyDecorators(
    read((raw) => raw.replace(/\/+$/, ''), opts.default?.replace(/\/+$/, '')),
    presence(opts.default, opts.optional === true),
    isUrl,
  );
}

/** Another dlock service: plain http:// only (docs/operations.md, "Containers, start-up and database outages"). */
export function EnvPeerUrl(opts: { default?: string; optional?: boolean } = {}): PropertyDecorator {
  return applyDecorators(
    EnvUrl(opts),
    ValidateBy({
      name: 'isPeerUrl',
      validator: {
        validate: (value) => {
          if (value === undefined && opts.optional === true) return true;
          const url = new URL(value as string);
          return url.protocol === 'http:' && url.hostname !== '';
        },
        defaultMessage: (args) =>
          `must be an http:// URL of a dlock service, got "${String(args!.value)}"`,
      },
    }),
  );
}

const PG_SHAPE = 'must be a postgres:// or postgresql:// URL with a host and a database';

/** Why a PostgreSQL URL is refused, or undefined; never the value: it holds a password. */
export function postgresUrlProblem(raw: string): string | undefined {
  if (!parsesAsUrl(raw)) return PG_SHAPE;
  const url = new URL(raw);
  const socketHost = url.searchParams.get('host');
  if (
    (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') ||
    (url.hostname === '' && !socketHost) ||
    url.pathname.length < 2
  ) {
    return `${PG_SHAPE} (got scheme "${url.protocol}")`;
  }
  return undefined;
}

/**
 * A PostgreSQL connection URL. The scheme is required: pg reads
 * `localhost:55432/db` as a URL of scheme `localhost:` and silently connects
 * to its defaults (127.0.0.1:5432).
 */
export function EnvPostgresUrl(opts: { optional?: boolean } = {}): PropertyDecorator {
  return applyDecorators(
    read((raw) => raw),
    presence(undefined, opts.optional === true),
    ValidateBy({
      name: 'isPostgresUrl',
      validator: {
        validate: (value) => typeof value === 'string' && postgresUrlProblem(value) === undefined,
        defaultMessage: (args) => postgresUrlProblem(String(args!.value)) ?? PG_SHAPE,
      },
    }),
  );
}
