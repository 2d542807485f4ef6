import 'reflect-metadata';
import { EnvError, type EnvSource } from './env-error';
import {
  EnvBool,
  EnvInt,
  EnvLogLevel,
  EnvNumber,
  EnvOneOf,
  EnvPeerUrl,
  EnvPostgresUrl,
  EnvString,
} from './env.decorators';
import { validateEnv } from './validate-env';

function problems(read: () => unknown): string[] {
  try {
    read();
  } catch (err) {
    if (err instanceof EnvError) return err.problems;
    throw err;
  }
  return [];
}

class PayEnv {
  @EnvPostgresUrl() PAYDB_URL!: string;
}
class LockDbEnv {
  @EnvPostgresUrl({ optional: true }) LOCKDB_URL?: string;
}

describe('EnvPostgresUrl', () => {
  const read = (value: string | undefined) => validateEnv(PayEnv, { PAYDB_URL: value });

  it.each([
    'postgres://pay_app:secret@pg-pay:5432/paydb',
    'postgresql://pay_app@127.0.0.1/paydb?sslmode=disable',
    'postgres:///paydb?host=/var/run/postgresql',
  ])('accepts %s as given', (url) => {
    expect(read(url).PAYDB_URL).toBe(url);
  });

  it.each([
    ['localhost:55432/proxydb', 'scheme "localhost:"'],
    ['http://pg-pay:5432/paydb', 'scheme "http:"'],
    ['postgres://pg-pay:5432', 'scheme "postgres:"'],
    ['postgres:///paydb', 'scheme "postgres:"'],
  ])('refuses %s, naming the variable and the scheme only', (url, why) => {
    expect(problems(() => read(url))).toEqual([
      `PAYDB_URL: must be a postgres:// or postgresql:// URL with a host and a database (got ${why})`,
    ]);
  });

  it('never echoes the value (it holds a password)', () => {
    const [problem] = problems(() => read('pay_app:hunter2@pg-pay/paydb'));
    expect(problem).toMatch(/^PAYDB_URL: /);
    expect(problem).not.toContain('hunter2');
  });

  it('is required; the optional one may be unset but is checked when set', () => {
    expect(problems(() => read(undefined))).toEqual(['PAYDB_URL: is required']);
    const optional = (v: string | undefined) => validateEnv(LockDbEnv, { LOCKDB_URL: v });
    expect(optional(undefined).LOCKDB_URL).toBeUndefined();
    expect(optional('').LOCKDB_URL).toBeUndefined();
    expect(problems(() => optional('lockhost:5432/lockdb'))).toEqual([
      'LOCKDB_URL: must be a postgres:// or postgresql:// URL with a host and a database (got scheme "lockhost:")',
    ]);
  });
});

class PeerEnv {
  @EnvPeerUrl({ default: 'http://127.0.0.1:8081' }) LOCK_SERVER_URL!: string;
}

describe('EnvPeerUrl', () => {
  const read = (value: string | undefined) => validateEnv(PeerEnv, { LOCK_SERVER_URL: value });

  it('accepts http:// (trailing slashes dropped) and applies the default', () => {
    expect(read('http://lock-server:8081/').LOCK_SERVER_URL).toBe('http://lock-server:8081');
    expect(read(undefined).LOCK_SERVER_URL).toBe('http://127.0.0.1:8081');
  });

  it.each(['https://lock-server:8081', 'ftp://lock-server', 'file:///tmp/x'])(
    'refuses %s, naming the variable',
    (url) => {
      expect(problems(() => read(url))).toEqual([
        `LOCK_SERVER_URL: must be an http:// URL of a dlock service, got "${url}"`,
      ]);
    },
  );

  it('refuses a value that is no URL at all', () => {
    expect(problems(() => read('lock-server:8081x'))).toHaveLength(1);
    expect(problems(() => read('not a url'))).toEqual([
      'LOCK_SERVER_URL: must be a URL, got "not a url"',
    ]);
  });
});

class LoggingEnv {
  @EnvLogLevel() LOG_LEVEL!: string;
}

describe('EnvLogLevel', () => {
  it("is info when unset and any of pino's levels when set", () => {
    expect(validateEnv(LoggingEnv, {}).LOG_LEVEL).toBe('info');
    expect(validateEnv(LoggingEnv, { LOG_LEVEL: 'silent' }).LOG_LEVEL).toBe('silent');
  });

  it('refuses a word pino does not know, listing the levels', () => {
    expect(problems(() => validateEnv(LoggingEnv, { LOG_LEVEL: 'loud' }))).toEqual([
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });
});

class KnobsEnv {
  @EnvInt({ default: 8080, min: 0, max: 65535 }) PORT!: number;
  @EnvInt({ min: 1 }) WORKERS!: number;
  @EnvNumber({ default: 0.3, min: 0.01, max: 0.66 }) MARGIN!: number;
  @EnvBool({ default: true }) FENCING!: boolean;
  @EnvOneOf(['pg', 'etcd'], { default: 'pg' }) BACKEND!: 'pg' | 'etcd';
  @EnvString({ maxLength: 8, pattern: /^[a-z]+$/ }) OWNER!: string;
}

describe('validateEnv', () => {
  const base: EnvSource = { WORKERS: '2', OWNER: 'exec' };

  it('applies defaults to unset and empty variables and parses the rest', () => {
    const env = validateEnv(KnobsEnv, { ...base, PORT: '', FENCING: '0', MARGIN: '.5' });
    expect({ ...env }).toEqual({
      PORT: 8080,
      WORKERS: 2,
      MARGIN: 0.5,
      FENCING: false,
      BACKEND: 'pg',
      OWNER: 'exec',
    });
    expect(Object.isFrozen(env)).toBe(true);
  });

  it('names every offending variable, once each, never coercing a value', () => {
    const source: EnvSource = {
      PORT: '80a',
      WORKERS: '0',
      MARGIN: '1e3',
      FENCING: 'maybe',
      BACKEND: 'mysql',
      OWNER: 'much-too-long',
      UNRELATED: 'ignored',
    };
    expect(problems(() => validateEnv(KnobsEnv, source))).toEqual([
      'PORT: must be an integer, got "80a"',
      'WORKERS: must be >= 1',
      'MARGIN: must be a number, got "1e3"',
      'FENCING: must be true or false, got "maybe"',
      'BACKEND: must be one of pg, etcd, got "mysql"',
      'OWNER: must be at most 8 characters',
    ]);
  });

  it('reports missing, out-of-range and misshapen values', () => {
    expect(problems(() => validateEnv(KnobsEnv, {}))).toEqual([
      'WORKERS: is required',
      'OWNER: is required',
    ]);
    expect(
      problems(() =>
        validateEnv(KnobsEnv, { ...base, PORT: '65536', WORKERS: '99999999999999999999' }),
      ),
    ).toEqual(['PORT: must be <= 65535', 'WORKERS: is out of range']);
    expect(problems(() => validateEnv(KnobsEnv, { ...base, OWNER: 'Exec' }))).toEqual([
      'OWNER: must match /^[a-z]+$/',
    ]);
  });
});
