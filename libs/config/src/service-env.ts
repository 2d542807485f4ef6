import { EnvBindHost, EnvInt, EnvLogLevel, type LogLevel } from './env.decorators';

/**
 * What an environment class may build on: a class of no arguments (an auth class of
 * `@dlock/identity`, another group, or none). `any[]` is the shape TypeScript requires of a
 * mixin's base.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EnvClass<T extends object = object> = new (...args: any[]) => T;

class NoEnv {}

/**
 * The variables every dlock service reads (docs/operations.md, "Configuration"): the port it
 * listens on, the address PORT is bound on (0.0.0.0 in containers) and the log level. An app's
 * one environment class extends `ServiceEnv(its port, its other groups)`.
 */
export function ServiceEnv<B extends EnvClass>(port: number, Base: B = NoEnv as B) {
  class Service extends Base {
    @EnvInt({ default: port, min: 0, max: 65535 }) readonly PORT!: number;
    @EnvBindHost() readonly BIND_HOST!: string;
    @EnvLogLevel() readonly LOG_LEVEL!: LogLevel;
  }
  return Service;
}

type RateLimitVars<P extends string> = `${P}_RATE_LIMIT` | `${P}_RATE_WINDOW_MS`;

/**
 * `<P>_RATE_LIMIT` requests one caller identity may make per `<P>_RATE_WINDOW_MS`; past it 429
 * (docs/security.md, "Limits"). The names are the app's (LOCK_, PAYMENT_, RAIL_PROXY_), the
 * rules the same everywhere.
 */
export function RateLimitEnv<P extends string, B extends EnvClass>(prefix: P, Base: B) {
  class RateLimited extends Base {}
  const limit = EnvInt({ default: 2_000, min: 1, max: 1_000_000 });
  const window = EnvInt({ default: 1_000, min: 100, max: 3_600_000 });
  limit(RateLimited.prototype, `${prefix}_RATE_LIMIT`);
  window(RateLimited.prototype, `${prefix}_RATE_WINDOW_MS`);
  return RateLimited as B & EnvClass<{ readonly [K in RateLimitVars<P>]: number }>;
}
