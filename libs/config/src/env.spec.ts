import { EnvError, env, readEnv } from './env';

function problems(read: () => unknown): string[] {
  try {
    read();
  } catch (err) {
    if (err instanceof EnvError) return err.problems;
    throw err;
  }
  return [];
}

describe('env.postgresUrl', () => {
  const read = (value: string | undefined) =>
    readEnv({ PAYDB_URL: env.postgresUrl() }, { PAYDB_URL: value });

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

  it('is required; the optional reader allows it unset but checks it when set', () => {
    expect(problems(() => read(undefined))).toEqual(['PAYDB_URL: is required']);
    const optional = (v: string | undefined) =>
      readEnv({ LOCKDB_URL: env.optionalPostgresUrl() }, { LOCKDB_URL: v });
    expect(optional(undefined).LOCKDB_URL).toBeUndefined();
    expect(optional('').LOCKDB_URL).toBeUndefined();
    expect(problems(() => optional('lockhost:5432/lockdb'))).toEqual([
      'LOCKDB_URL: must be a postgres:// or postgresql:// URL with a host and a database (got scheme "lockhost:")',
    ]);
  });
});

describe('env.peerUrl', () => {
  const read = (value: string | undefined) =>
    readEnv(
      { LOCK_SERVER_URL: env.peerUrl({ default: 'http://127.0.0.1:8081' }) },
      { LOCK_SERVER_URL: value },
    );

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
