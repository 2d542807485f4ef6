import { EnvError } from '@dlock/config';
import { readPaymentConfig } from './config';

const AUTH = {
  AUTH_JWKS: '/run/dlock/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/run/dlock/policy.yaml',
  GRANT_JWKS: '/run/dlock/grant-keys.jwks.json',
  INSTRUCTION_SIGNING_KEYS: '/run/dlock/instruction-keys.json',
  RECEIPT_JWKS: '/run/dlock/receipt-keys.jwks.json',
};

const DB = 'postgres://u:p@127.0.0.1:5432/paydb';

describe('payment-resource config', () => {
  it('has the documented defaults', () => {
    expect(readPaymentConfig({ PAYDB_URL: DB, ...AUTH })).toEqual({
      PORT: 8082,
      BIND_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      PAYMENT_RATE_LIMIT: 2_000,
      PAYMENT_RATE_WINDOW_MS: 1_000,
      PAYDB_URL: DB,
      ...AUTH,
      AUTH_TOKEN_LIFETIME_MAX_MS: 3_600_000,
      AUTH_OPERATOR_AUDIENCE: 'console',
      PAYDB_POOL_MAX: 10,
      PAYDB_STATEMENT_TIMEOUT_MS: 2_000,
      PAYMENT_REQUEST_BUDGET_MS: 2_800,
      PAYMENT_FENCING_ENABLED: true,
      PAYOUT_AMBIGUOUS_SLA_MS: 14_400_000,
      PAYMENT_CLEARING_SHARDS: 1,
    });
  });

  it('turns the fence off only under DLOCK_HARNESS=1', () => {
    expect(() =>
      readPaymentConfig({ PAYDB_URL: DB, ...AUTH, PAYMENT_FENCING_ENABLED: 'false' }),
    ).toThrow(/PAYMENT_FENCING_ENABLED=false is refused/);
    expect(() =>
      readPaymentConfig({
        PAYDB_URL: DB,
        ...AUTH,
        PAYMENT_FENCING_ENABLED: 'false',
        DLOCK_HARNESS: 'yes',
      }),
    ).toThrow(EnvError);
    expect(
      readPaymentConfig({
        PAYDB_URL: DB,
        ...AUTH,
        PAYMENT_FENCING_ENABLED: 'false',
        DLOCK_HARNESS: '1',
      }).PAYMENT_FENCING_ENABLED,
    ).toBe(false);
  });

  it('refuses a statement timeout that is not below the request budget, naming both', () => {
    for (const [statement, budget] of [
      ['2800', undefined],
      ['3000', '3000'],
      [undefined, '1500'],
    ]) {
      const source: Record<string, string> = { PAYDB_URL: DB, ...AUTH };
      if (statement !== undefined) source.PAYDB_STATEMENT_TIMEOUT_MS = statement;
      if (budget !== undefined) source.PAYMENT_REQUEST_BUDGET_MS = budget;
      expect(() => readPaymentConfig(source)).toThrow(
        /PAYDB_STATEMENT_TIMEOUT_MS \(\d+\) must be below PAYMENT_REQUEST_BUDGET_MS \(\d+\)/,
      );
    }
    expect(
      readPaymentConfig({
        PAYDB_URL: DB,
        ...AUTH,
        PAYDB_STATEMENT_TIMEOUT_MS: '2999',
        PAYMENT_REQUEST_BUDGET_MS: '3000',
      }).PAYDB_STATEMENT_TIMEOUT_MS,
    ).toBe(2_999);
  });

  it.each([
    [{}, 'PAYDB_URL'],
    [{ PAYDB_URL: 'not a url' }, 'PAYDB_URL'],
    [{ PAYDB_URL: DB, ...AUTH, PORT: '80a' }, 'PORT'],
    [{ PAYDB_URL: DB, ...AUTH, PAYOUT_AMBIGUOUS_SLA_MS: '4h' }, 'PAYOUT_AMBIGUOUS_SLA_MS'],
    [{ PAYDB_URL: DB, ...AUTH, PAYDB_POOL_MAX: '0' }, 'PAYDB_POOL_MAX'],
    [{ PAYDB_URL: DB, ...AUTH, PAYMENT_FENCING_ENABLED: 'maybe' }, 'PAYMENT_FENCING_ENABLED'],
    [{ PAYDB_URL: DB, ...AUTH, LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ PAYDB_URL: DB, ...AUTH, PAYMENT_CLEARING_SHARDS: '0' }, 'PAYMENT_CLEARING_SHARDS'],
    [{ PAYDB_URL: DB, ...AUTH, PAYMENT_CLEARING_SHARDS: '65' }, 'PAYMENT_CLEARING_SHARDS'],
  ])('rejects %p naming %s', (source, name) => {
    expect(() => readPaymentConfig(source)).toThrow(new RegExp(name));
  });
});
