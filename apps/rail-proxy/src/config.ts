import { EnvError, assertKillSwitchAllowed, env, readEnv, type EnvOf } from '@dlock/config';

/** Every knob of rail-proxy (docs/rail.md). Read once at boot. */
export const RAIL_PROXY_ENV = {
  PORT: env.int({ default: 8083, min: 0, max: 65535 }),
  LOG_LEVEL: env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
  }),
  PROXYDB_URL: env.postgresUrl(),
  PROXYDB_POOL_MAX: env.int({ default: 10, min: 1, max: 100 }),
  RAIL_STUB_URL: env.peerUrl({ default: 'http://127.0.0.1:8085' }),
  // C3 §3.8: 1 s connect / 8 s read, inside the executor's (read + 2 s).
  RAIL_CONNECT_TIMEOUT_MS: env.int({ default: 1_000, min: 1, max: 60_000 }),
  RAIL_READ_TIMEOUT_MS: env.int({ default: 8_000, min: 1, max: 120_000 }),
  RAIL_PROXY_UNAVAILABLE_RETRY_AFTER_MS: env.int({ default: 1_000, min: 0, max: 60_000 }),
  RAIL_PROXY_FENCING_ENABLED: env.bool({ default: true }),
  DLOCK_HARNESS: env.bool({ default: false }),
  /** Test-only: sleep between committing the intent and presenting it (harness only). */
  RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: env.int({ default: 0, min: 0, max: 600_000 }),
};

export type RailProxyConfig = EnvOf<typeof RAIL_PROXY_ENV>;
export const RAIL_PROXY_CONFIG = Symbol('RAIL_PROXY_CONFIG');

export function readRailProxyConfig(
  source: Record<string, string | undefined> = process.env,
): RailProxyConfig {
  const config = readEnv(RAIL_PROXY_ENV, source);
  // DECISIONS §7: the kill switch exists for the harness's negative control only.
  assertKillSwitchAllowed('RAIL_PROXY_FENCING_ENABLED', config.RAIL_PROXY_FENCING_ENABLED, source);
  if (config.RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS > 0 && !config.DLOCK_HARNESS) {
    throw new EnvError([
      'RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS is a test hook: it is refused unless DLOCK_HARNESS=1',
    ]);
  }
  return config;
}
