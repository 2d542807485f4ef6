import 'reflect-metadata';
import { EnvError, validateEnv } from '@dlock/config';
import { serviceAuthOptions, AuthEnv } from './auth-env';

const BASE = {
  AUTH_JWKS: '/keys/jwks.json',
  AUTH_ISSUER: 'https://issuer',
  AUTH_POLICY: '/p.yaml',
};

function problems(env: Record<string, string>): string[] {
  try {
    validateEnv(AuthEnv, { ...BASE, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(EnvError);
    return (err as EnvError).problems;
  }
  return [];
}

describe('AuthEnv: token lifetime and Kubernetes identity (docs/security.md)', () => {
  it('defaults: a one-hour cap, no Kubernetes settings (a service account is its full sub)', () => {
    const env = validateEnv(AuthEnv, BASE);
    expect(serviceAuthOptions(env)).toEqual({
      jwks: '/keys/jwks.json',
      issuer: 'https://issuer',
      policyFile: '/p.yaml',
      tokenLifetimeMaxMs: 3_600_000,
      kubernetes: { namespace: undefined, podServiceAccounts: undefined },
      // People's tokens (X-Acting-For): the service's own issuer and keys, audience `console`.
      operator: {
        jwks: '/keys/jwks.json',
        issuer: 'https://issuer',
        audience: 'console',
        tokenLifetimeMaxMs: 3_600_000,
      },
    });
  });

  it('reads the namespace and the pod service accounts as a list', () => {
    const env = validateEnv(AuthEnv, {
      ...BASE,
      AUTH_TOKEN_LIFETIME_MAX_MS: '900000',
      AUTH_K8S_NAMESPACE: 'dlock',
      AUTH_K8S_POD_SERVICE_ACCOUNTS: 'executor,reconciler',
    });
    expect(serviceAuthOptions(env)).toMatchObject({
      tokenLifetimeMaxMs: 900_000,
      kubernetes: { namespace: 'dlock', podServiceAccounts: ['executor', 'reconciler'] },
    });
  });

  it.each<[Record<string, string>, string]>([
    [
      { AUTH_K8S_POD_SERVICE_ACCOUNTS: 'executor' },
      'AUTH_K8S_POD_SERVICE_ACCOUNTS: needs AUTH_K8S_NAMESPACE (the namespace of those service accounts)',
    ],
    [
      { AUTH_K8S_NAMESPACE: 'dlock', AUTH_K8S_POD_SERVICE_ACCOUNTS: 'executor, reconciler' },
      'AUTH_K8S_POD_SERVICE_ACCOUNTS: must match',
    ],
    [{ AUTH_K8S_NAMESPACE: 'Dlock' }, 'AUTH_K8S_NAMESPACE: must match'],
    [{ AUTH_TOKEN_LIFETIME_MAX_MS: '1000' }, 'AUTH_TOKEN_LIFETIME_MAX_MS: must be >= 60000'],
    [
      { AUTH_TOKEN_LIFETIME_MAX_MS: '604800000' },
      'AUTH_TOKEN_LIFETIME_MAX_MS: must be <= 86400000',
    ],
  ])('refuses %j', (env, problem) => {
    expect(problems(env)).toEqual([expect.stringContaining(problem)]);
  });
});
