/**
 * Typed, validated configuration read from the environment once at boot.
 * This is the only code in the project that reads `process.env`. A bad value
 * throws an EnvError naming every offending variable, and the process stops.
 */
export class EnvError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'EnvError';
  }
}

type Source = Record<string, string | undefined>;

interface Spec<T> {
  parse(raw: string | undefined, name: string): T;
}

function fail(name: string, why: string): never {
  throw new EnvError([`${name}: ${why}`]);
}

export const env = {
  string(opts: { default?: string; maxLength?: number; pattern?: RegExp } = {}): Spec<string> {
    return {
      parse(raw, name) {
        const value = raw === undefined || raw === '' ? opts.default : raw;
        if (value === undefined) fail(name, 'is required');
        if (opts.maxLength !== undefined && value.length > opts.maxLength) {
          fail(name, `must be at most ${opts.maxLength} characters`);
        }
        if (opts.pattern && !opts.pattern.test(value))
          fail(name, `must match ${String(opts.pattern)}`);
        return value;
      },
    };
  },
  optionalString(): Spec<string | undefined> {
    return { parse: (raw) => (raw === undefined || raw === '' ? undefined : raw) };
  },
  int(opts: { default?: number; min?: number; max?: number } = {}): Spec<number> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') {
          if (opts.default === undefined) fail(name, 'is required');
          return opts.default;
        }
        if (!/^-?\d+$/.test(raw)) fail(name, `must be an integer, got "${raw}"`);
        const value = Number(raw);
        if (!Number.isSafeInteger(value)) fail(name, 'is out of range');
        if (opts.min !== undefined && value < opts.min) fail(name, `must be >= ${opts.min}`);
        if (opts.max !== undefined && value > opts.max) fail(name, `must be <= ${opts.max}`);
        return value;
      },
    };
  },
  /** An integer whose default is derived from other variables by the app's config code. */
  optionalInt(opts: { min?: number; max?: number } = {}): Spec<number | undefined> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') return undefined;
        return env.int(opts).parse(raw, name);
      },
    };
  },
  number(opts: { default?: number; min?: number; max?: number } = {}): Spec<number> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') {
          if (opts.default === undefined) fail(name, 'is required');
          return opts.default;
        }
        if (!/^-?(\d+\.?\d*|\.\d+)$/.test(raw)) fail(name, `must be a number, got "${raw}"`);
        const value = Number(raw);
        if (opts.min !== undefined && value < opts.min) fail(name, `must be >= ${opts.min}`);
        if (opts.max !== undefined && value > opts.max) fail(name, `must be <= ${opts.max}`);
        return value;
      },
    };
  },
  bool(opts: { default: boolean }): Spec<boolean> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') return opts.default;
        if (raw === 'true' || raw === '1') return true;
        if (raw === 'false' || raw === '0') return false;
        return fail(name, `must be true or false, got "${raw}"`);
      },
    };
  },
  oneOf<const T extends string>(values: readonly T[], opts: { default?: T } = {}): Spec<T> {
    return {
      parse(raw, name) {
        const value = raw === undefined || raw === '' ? opts.default : raw;
        if (value === undefined) fail(name, `is required (one of ${values.join(', ')})`);
        if (!(values as readonly string[]).includes(value)) {
          fail(name, `must be one of ${values.join(', ')}, got "${value}"`);
        }
        return value as T;
      },
    };
  },
  url(opts: { default?: string } = {}): Spec<string> {
    return {
      parse(raw, name) {
        const value = raw === undefined || raw === '' ? opts.default : raw;
        if (value === undefined) fail(name, 'is required');
        try {
          new URL(value);
        } catch {
          fail(name, `must be a URL, got "${value}"`);
        }
        return value.replace(/\/+$/, '');
      },
    };
  },
  optionalUrl(): Spec<string | undefined> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') return undefined;
        return env.url().parse(raw, name);
      },
    };
  },
  /**
   * A PostgreSQL connection URL. The scheme is required: pg reads
   * `localhost:55432/db` as a URL of scheme `localhost:` and silently connects
   * to its defaults (127.0.0.1:5432). The value is never echoed: it holds a password.
   */
  postgresUrl(): Spec<string> {
    return {
      parse(raw, name) {
        if (raw === undefined || raw === '') fail(name, 'is required');
        return checkPostgresUrl(raw, name);
      },
    };
  },
  optionalPostgresUrl(): Spec<string | undefined> {
    return {
      parse: (raw, name) =>
        raw === undefined || raw === '' ? undefined : checkPostgresUrl(raw, name),
    };
  },
  /** Another dlock service: plain http:// only (docs/operations.md, "Containers, start-up and database outages"). */
  peerUrl(opts: { default?: string } = {}): Spec<string> {
    return {
      parse(raw, name) {
        const value = env.url(opts).parse(raw, name);
        const url = new URL(value);
        if (url.protocol !== 'http:' || url.hostname === '') {
          fail(name, `must be an http:// URL of a dlock service, got "${value}"`);
        }
        return value;
      },
    };
  },
};

function checkPostgresUrl(raw: string, name: string): string {
  const shape = 'must be a postgres:// or postgresql:// URL with a host and a database';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(name, shape);
  }
  const socketHost = url.searchParams.get('host');
  if (
    (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') ||
    (url.hostname === '' && !socketHost) ||
    url.pathname.length < 2
  ) {
    fail(name, `${shape} (got scheme "${url.protocol}")`);
  }
  return raw;
}

export type EnvSchema = Record<string, Spec<unknown>>;
export type EnvOf<S extends EnvSchema> = {
  readonly [K in keyof S]: S[K] extends Spec<infer T> ? T : never;
};

/** Reads every variable of the schema; collects all problems before failing. */
export function readEnv<S extends EnvSchema>(schema: S, source: Source = process.env): EnvOf<S> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema)) {
    try {
      out[name] = spec.parse(source[name], name);
    } catch (err) {
      if (err instanceof EnvError) problems.push(...err.problems);
      else throw err;
    }
  }
  if (problems.length > 0) throw new EnvError(problems);
  return Object.freeze(out) as EnvOf<S>;
}

/** The fencing kill switches exist for the harness's negative control only (DECISIONS §7). */
export function assertKillSwitchAllowed(
  name: string,
  enabled: boolean,
  source: Source = process.env,
): void {
  if (!enabled && source.DLOCK_HARNESS !== '1') {
    throw new EnvError([
      `${name}=false is refused: it is allowed only under DLOCK_HARNESS=1 (the harness's negative control)`,
    ]);
  }
}
