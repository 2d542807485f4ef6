import { EnvError } from '@dlock/config';
import { readRailProxyConfig } from './config';

const AUTH = {
  AUTH_JWKS: '/run/dlock/jwks.json',
  AUTH_ISSUER: 'https://issuer.test',
  AUTH_POLICY: '/run/dlock/policy.yaml',
  GRANT_JWKS: '/run/dlock/grant-keys.jwks.json',
  INSTRUCTION_JWKS: '/run/dlock/instruction-keys.jwks.json',
  RECEIPT_SIGNING_KEYS: '/run/dlock/receipt-keys.json',
};

const DB = 'postgres://u:p@127.0.0.1:5432/proxydb';

describe('rail-proxy config: budgets shrink inward', () => {
  it('derives its own request budget and shortest rail read from the rail timeouts', () => {
    const config = readRailProxyConfig({ PROXYDB_URL: DB, ...AUTH });
    expect(config.RAIL_CONNECT_TIMEOUT_MS).toBe(1_000);
    expect(config.RAIL_READ_TIMEOUT_MS).toBe(8_000);
    // Below the executor's submit read timeout (8 s + 2 s).
    expect(config.RAIL_PROXY_REQUEST_BUDGET_MS).toBe(9_500);
    expect(config.RAIL_READ_TIMEOUT_MIN_MS).toBe(2_000);
    const short = readRailProxyConfig({
      PROXYDB_URL: DB,
      ...AUTH,
      RAIL_CONNECT_TIMEOUT_MS: '500',
      RAIL_READ_TIMEOUT_MS: '500',
    });
    expect([short.RAIL_PROXY_REQUEST_BUDGET_MS, short.RAIL_READ_TIMEOUT_MIN_MS]).toEqual([
      1_500, 125,
    ]);
  });

  it('refuses a request budget that does not exceed connect + read, naming the variables', () => {
    for (const budget of ['9000', '9100', '5000']) {
      expect(() =>
        readRailProxyConfig({ PROXYDB_URL: DB, ...AUTH, RAIL_PROXY_REQUEST_BUDGET_MS: budget }),
      ).toThrow(
        /RAIL_PROXY_REQUEST_BUDGET_MS \(\d+\) must exceed RAIL_CONNECT_TIMEOUT_MS \+ RAIL_READ_TIMEOUT_MS \+ 100 ms \(9100\)/,
      );
    }
    expect(
      readRailProxyConfig({ PROXYDB_URL: DB, ...AUTH, RAIL_PROXY_REQUEST_BUDGET_MS: '9101' })
        .RAIL_PROXY_REQUEST_BUDGET_MS,
    ).toBe(9_101);
  });

  it('refuses a read timeout raised past an explicit request budget', () => {
    expect(() =>
      readRailProxyConfig({
        PROXYDB_URL: DB,
        ...AUTH,
        RAIL_READ_TIMEOUT_MS: '20000',
        RAIL_PROXY_REQUEST_BUDGET_MS: '9500',
      }),
    ).toThrow(EnvError);
  });

  it('refuses a shortest rail read above the rail read timeout', () => {
    expect(() =>
      readRailProxyConfig({ PROXYDB_URL: DB, ...AUTH, RAIL_READ_TIMEOUT_MIN_MS: '8001' }),
    ).toThrow(/RAIL_READ_TIMEOUT_MIN_MS \(8001\) must not exceed RAIL_READ_TIMEOUT_MS \(8000\)/);
  });

  it.each([
    [{ RAIL_PROXY_REQUEST_BUDGET_MS: 'soon' }, 'RAIL_PROXY_REQUEST_BUDGET_MS'],
    [{ RAIL_READ_TIMEOUT_MIN_MS: '0' }, 'RAIL_READ_TIMEOUT_MIN_MS'],
  ])('rejects %p naming %s', (extra, name) => {
    expect(() => readRailProxyConfig({ PROXYDB_URL: DB, ...AUTH, ...extra })).toThrow(
      new RegExp(name),
    );
  });
});
