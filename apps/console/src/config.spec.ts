import { EnvError } from '@dlock/config';
import { readConsoleConfig } from './config';

const base = { AUTH_TOKEN_DIR: '/tmp/tokens' };

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

  it('refuses a start without a token directory, and names a bad executor URL', () => {
    expect(() => readConsoleConfig({})).toThrow(/AUTH_TOKEN_DIR/);
    expect(() => readConsoleConfig({ ...base, EXECUTOR_URLS: 'https://x:1' })).toThrow(EnvError);
    expect(() => readConsoleConfig({ ...base, EXECUTOR_URLS: 'https://x:1' })).toThrow(
      /EXECUTOR_URLS\[0\]/,
    );
  });
});
