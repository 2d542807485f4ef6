import type { Request } from 'express';
import { EnvError } from '@dlock/config';
import { readLockServerConfig } from '../config';
import { lockServerAdmission } from './admission.config';

const BASE = {
  GRANT_SIGNING_KEYS: '/keys.json',
  LOCKDB_URL: 'postgres://u@db:5432/lockdb',
  AUTH_JWKS: '/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/policy.yaml',
};

// docs/lock-server.md, "Limits": requests in flight per identity.
describe('lock-server admission', () => {
  it('allows 64 requests in flight per identity unless told otherwise, and its 429 hint is the contention one', () => {
    const limits = lockServerAdmission(
      readLockServerConfig({ ...BASE, LOCK_CONTENTION_RETRY_AFTER_MS: '700' }),
    );
    expect([limits.inFlightPerOwnerMax, limits.retryAfterMs]).toEqual([64, 700]);
  });

  it('refuses a limit below the waiters one identity may have, or none at all', () => {
    const read = (env: Record<string, string>) => () => readLockServerConfig({ ...BASE, ...env });
    expect(
      read({ LOCK_WAITERS_PER_OWNER_MAX: '32', LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '31' }),
    ).toThrow(
      /LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: must not be below LOCK_WAITERS_PER_OWNER_MAX/,
    );
    expect(read({ LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '0' })).toThrow(EnvError);
    expect(read({ LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: 'many' })).toThrow(EnvError);
    expect(
      read({ LOCK_WAITERS_PER_OWNER_MAX: '32', LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: '32' })(),
    ).toMatchObject({ LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: 32 });
  });

  it('never holds back a heartbeat, a close or a release; everything else counts', () => {
    const { exempt } = lockServerAdmission(readLockServerConfig(BASE));
    const req = (method: string, path: string) => ({ method, path }) as Request;
    const session = '0d4f3c1e-8a6b-4d7e-9f10-2b3c4d5e6f70';
    expect(exempt?.(req('POST', `/v1/sessions/${session}/heartbeat`))).toBe(true);
    expect(exempt?.(req('DELETE', `/v1/sessions/${session}`))).toBe(true);
    expect(exempt?.(req('DELETE', '/v1/locks/payout:1'))).toBe(true);
    for (const [method, path] of [
      ['POST', '/v1/sessions'],
      ['POST', '/v1/locks/payout:1/acquire'],
      ['POST', '/v1/locks/payout:1/renew'],
      ['GET', '/v1/locks/payout:1'],
      ['GET', `/v1/sessions/${session}/heartbeat`],
      ['DELETE', '/v1/locks/payout:1/extra'],
    ])
      expect({ method, path, exempt: exempt?.(req(method, path)) }).toEqual({
        method,
        path,
        exempt: false,
      });
  });
});
