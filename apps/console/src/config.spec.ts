import { EnvError } from '@dlock/config';
import { readConsoleConfig } from './config';

const base = { AUTH_TOKEN_DIR: '/tmp/tokens', AUTH_POLICY: '/etc/dlock/policy.yaml' };

describe('readConsoleConfig', () => {
  it('polls the three services, each executor and the reconciler for safety events', () => {
    const config = readConsoleConfig({
      ...base,
      EXECUTOR_URLS: 'http://127.0.0.1:8084, http://127.0.0.1:8095',
      RECONCILER_URL: 'http://127.0.0.1:8086',
    });
    expect(config.eventSources).toEqual([
      { name: 'lock-server', url: 'http://127.0.0.1:8081' },
      { name: 'payment-resource', url: 'http://127.0.0.1:8082' },
      { name: 'rail-proxy', url: 'http://127.0.0.1:8083' },
      { name: 'executor-1', url: 'http://127.0.0.1:8084' },
      { name: 'executor-2', url: 'http://127.0.0.1:8095' },
      { name: 'reconciler', url: 'http://127.0.0.1:8086' },
    ]);
    expect(config.CONSOLE_HOST).toBe('127.0.0.1');
    expect(config.PORT).toBe(8090);
  });

  it('binds to loopback and signs people in with their own token by default', () => {
    expect(readConsoleConfig(base)).toMatchObject({
      CONSOLE_HOST: '127.0.0.1',
      allowedHosts: [],
      CONSOLE_SIGN_IN: 'token',
      AUTH_OPERATOR_AUDIENCE: 'console',
      CONSOLE_SESSIONS_MAX: 64,
      CONSOLE_SESSION_MAX_MS: 43_200_000,
    });
  });

  it('needs the policy: without it nobody could be checked, so it does not start', () => {
    expect(() => readConsoleConfig({ AUTH_TOKEN_DIR: '/tmp/tokens' })).toThrow(/AUTH_POLICY/);
    expect(readConsoleConfig(base)).toMatchObject({
      CONSOLE_SESSIONS_PER_SUBJECT_MAX: 4,
      CONSOLE_SSE_CLIENTS_PER_SUBJECT_MAX: 4,
    });
  });

  it('reads the Host names it answers to, and names a bad one', () => {
    expect(
      readConsoleConfig({ ...base, CONSOLE_ALLOWED_HOSTS: 'Console.Example.com, 10.0.0.5:8090' })
        .allowedHosts,
    ).toEqual(['console.example.com', '10.0.0.5:8090']);
    expect(() =>
      readConsoleConfig({ ...base, CONSOLE_ALLOWED_HOSTS: 'ok.example, http://x/' }),
    ).toThrow(/CONSOLE_ALLOWED_HOSTS\[1\]/);
    expect(() => readConsoleConfig({ ...base, CONSOLE_SIGN_IN: 'cookie' })).toThrow(
      /CONSOLE_SIGN_IN/,
    );
  });

  it('refuses a start without a token directory, and names a bad executor URL', () => {
    expect(() => readConsoleConfig({})).toThrow(/AUTH_TOKEN_DIR/);
    expect(() => readConsoleConfig({ ...base, EXECUTOR_URLS: 'https://x:1' })).toThrow(EnvError);
    expect(() => readConsoleConfig({ ...base, EXECUTOR_URLS: 'https://x:1' })).toThrow(
      /EXECUTOR_URLS\[0\]/,
    );
  });
});
