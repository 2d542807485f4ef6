import { EnvError } from '@dlock/config';
import { readExecutorConfig } from './config';

const AUTH = {
  AUTH_JWKS: '/run/dlock/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/run/dlock/policy.yaml',
  AUTH_TOKEN_DIR: '/run/dlock/tokens',
};

const base = { OWNER_ID: 'exec-1', ...AUTH };

test('defaults: port 8084, an 11 s submit budget covered by the 20 s lease', () => {
  const config = readExecutorConfig(base);
  expect(config.PORT).toBe(8084);
  expect(config.LOCK_SESSION_TTL_MS).toBe(15_000);
  expect(config.LOCK_CLIENT_SAFETY_MARGIN).toBe(0.3);
  expect(config.submitBudgetMs).toBe(11_000);
  expect(Object.isFrozen(config)).toBe(true);
});

test('OWNER_ID is required', () => {
  expect(() => readExecutorConfig({})).toThrow(/OWNER_ID: is required/);
});

test('a lease that cannot cover one submit stops the process, naming the variable', () => {
  expect(() => readExecutorConfig({ ...base, LOCK_DEFAULT_TTL_MS: '15000' })).toThrow(
    /LOCK_DEFAULT_TTL_MS: .*submit budget of 11000 ms/,
  );
});

test.each([
  ['EXECUTOR_SKIP_LIVENESS_CHECK', 'true'],
  ['EXECUTOR_PAUSE_BEFORE_SUBMIT_MS', '500'],
  ['EXECUTOR_CRASH_AT', 'after-claim'],
  ['EXECUTOR_ACCOUNT_ID', 'acct-1'],
])('%s is refused outside the harness', (name, value) => {
  expect(() => readExecutorConfig({ ...base, [name]: value })).toThrow(EnvError);
  expect(() => readExecutorConfig({ ...base, [name]: value, DLOCK_HARNESS: '1' })).not.toThrow();
});

test('an unknown crash point is refused', () => {
  expect(() =>
    readExecutorConfig({ ...base, DLOCK_HARNESS: '1', EXECUTOR_CRASH_AT: 'somewhere' }),
  ).toThrow(/EXECUTOR_CRASH_AT: must be one of/);
});
