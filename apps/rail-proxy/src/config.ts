import { EnvError, assertKillSwitchAllowed, env, readEnv, type EnvOf } from '@dlock/config';
import { AUTH_ENV } from '@dlock/identity';

/** Every knob of rail-proxy (docs/rail.md). Read once at boot. */
export const RAIL_PROXY_ENV = {
  PORT: env.int({ default: 8083, min: 0, max: 65535 }),
  ...AUTH_ENV,
  LOG_LEVEL: env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
  }),
  PROXYDB_URL: env.postgresUrl(),
  PROXYDB_POOL_MAX: env.int({ default: 10, min: 1, max: 100 }),
  RAIL_STUB_URL: env.peerUrl({ default: 'http://127.0.0.1:8085' }),
  // C3 §3.8: 1 s connect / 8 s read, inside the executor's (read + 2 s).
  RAIL_CONNECT_TIMEOUT_MS: env.int({ default: 1_000, min: 1, max: 60_000 }),
  RAIL_READ_TIMEOUT_MS: env.int({ default: 8_000, min: 1, max: 120_000 }),
  /** The shortest rail read a submission starts with (default: a quarter of RAIL_READ_TIMEOUT_MS). */
  RAIL_READ_TIMEOUT_MIN_MS: env.optionalInt({ min: 1, max: 120_000 }),
  /**
   * The proxy's own deadline per submission (default: RAIL_CONNECT_TIMEOUT_MS +
   * RAIL_READ_TIMEOUT_MS + 500 ms), below the executor's submit read timeout
   * (RAIL_READ_TIMEOUT_MS + 2 s) so its answer arrives while someone listens.
   */
  RAIL_PROXY_REQUEST_BUDGET_MS: env.optionalInt({ min: 1, max: 300_000 }),
  RAIL_PROXY_UNAVAILABLE_RETRY_AFTER_MS: env.int({ default: 1_000, min: 0, max: 60_000 }),
  RAIL_PROXY_FENCING_ENABLED: env.bool({ default: true }),
  DLOCK_HARNESS: env.bool({ default: false }),
  /** Test-only: sleep between committing the intent and presenting it (harness only). */
  RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS: env.int({ default: 0, min: 0, max: 600_000 }),
};

type RawRailProxyConfig = EnvOf<typeof RAIL_PROXY_ENV>;
type Derived = 'RAIL_READ_TIMEOUT_MIN_MS' | 'RAIL_PROXY_REQUEST_BUDGET_MS';
export type RailProxyConfig = Omit<RawRailProxyConfig, Derived> & {
  readonly [K in Derived]: number;
};
/** Kept back from every deadline for the answer's way back to the caller. */
export const RAIL_DEADLINE_MARGIN_MS = 100;
/** The default budget's room for admission and recording around the rail call. */
const RAIL_PROXY_BUDGET_SLACK_MS = 500;
export const RAIL_PROXY_CONFIG = Symbol('RAIL_PROXY_CONFIG');

export function readRailProxyConfig(
  source: Record<string, string | undefined> = process.env,
): RailProxyConfig {
  const raw = readEnv(RAIL_PROXY_ENV, source);
  const config: RailProxyConfig = {
    ...raw,
    RAIL_READ_TIMEOUT_MIN_MS:
      raw.RAIL_READ_TIMEOUT_MIN_MS ?? Math.ceil(raw.RAIL_READ_TIMEOUT_MS / 4),
    RAIL_PROXY_REQUEST_BUDGET_MS:
      raw.RAIL_PROXY_REQUEST_BUDGET_MS ??
      raw.RAIL_CONNECT_TIMEOUT_MS + raw.RAIL_READ_TIMEOUT_MS + RAIL_PROXY_BUDGET_SLACK_MS,
  };
  // DECISIONS §7: the kill switch exists for the harness's negative control only.
  assertKillSwitchAllowed('RAIL_PROXY_FENCING_ENABLED', config.RAIL_PROXY_FENCING_ENABLED, source);
  if (config.RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS > 0 && !config.DLOCK_HARNESS) {
    throw new EnvError([
      'RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS is a test hook: it is refused unless DLOCK_HARNESS=1',
    ]);
  }
  const problems = budgetProblems(config);
  if (problems.length > 0) throw new EnvError(problems);
  return config;
}

/** Budgets shrink inward (docs/rail.md "Deadlines"): the rail call fits in the proxy's own budget. */
function budgetProblems(config: RailProxyConfig): string[] {
  const problems: string[] = [];
  const railMs =
    config.RAIL_CONNECT_TIMEOUT_MS + config.RAIL_READ_TIMEOUT_MS + RAIL_DEADLINE_MARGIN_MS;
  if (railMs >= config.RAIL_PROXY_REQUEST_BUDGET_MS) {
    problems.push(
      `RAIL_PROXY_REQUEST_BUDGET_MS (${config.RAIL_PROXY_REQUEST_BUDGET_MS}) must exceed ` +
        `RAIL_CONNECT_TIMEOUT_MS + RAIL_READ_TIMEOUT_MS + ${RAIL_DEADLINE_MARGIN_MS} ms (${railMs})`,
    );
  }
  if (config.RAIL_READ_TIMEOUT_MIN_MS > config.RAIL_READ_TIMEOUT_MS) {
    problems.push(
      `RAIL_READ_TIMEOUT_MIN_MS (${config.RAIL_READ_TIMEOUT_MIN_MS}) must not exceed ` +
        `RAIL_READ_TIMEOUT_MS (${config.RAIL_READ_TIMEOUT_MS})`,
    );
  }
  return problems;
}
