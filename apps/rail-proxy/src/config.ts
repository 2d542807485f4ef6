import {
  assertKillSwitchAllowed,
  EnvBool,
  EnvError,
  EnvInt,
  EnvPeerUrl,
  EnvPostgresUrl,
  type EnvSource,
  EnvString,
  RateLimitEnv,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { AuthEnv, GrantJwksEnv } from '@dlock/identity';

/** Every knob of rail-proxy (docs/rail.md). Read once at boot. */
export class RailProxyEnv extends ServiceEnv(
  8083,
  RateLimitEnv('RAIL_PROXY', GrantJwksEnv(AuthEnv)),
) {
  @EnvPostgresUrl() readonly PROXYDB_URL!: string;
  /** payment-resource's public keys for payout instructions (docs/rail.md, "Instructions"). */
  @EnvString({ maxLength: 2048 }) readonly INSTRUCTION_JWKS!: string;
  /** This service's own keys for the rail receipts it signs (docs/rail.md, "Receipts"). */
  @EnvString({ maxLength: 1024 }) readonly RECEIPT_SIGNING_KEYS!: string;
  @EnvInt({ default: 10, min: 1, max: 100 }) readonly PROXYDB_POOL_MAX!: number;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8085' }) readonly RAIL_STUB_URL!: string;
  /** 1 s connect / 8 s read, inside the executor's (read + 2 s) (docs/rail.md, "Deadlines"). */
  @EnvInt({ default: 1_000, min: 1, max: 60_000 }) readonly RAIL_CONNECT_TIMEOUT_MS!: number;
  @EnvInt({ default: 8_000, min: 1, max: 120_000 }) readonly RAIL_READ_TIMEOUT_MS!: number;
  /** The shortest rail read a submission starts with (default: a quarter of RAIL_READ_TIMEOUT_MS). */
  @EnvInt({ optional: true, min: 1, max: 120_000 }) readonly RAIL_READ_TIMEOUT_MIN_MS?: number;
  /**
   * The proxy's own deadline per submission (default: RAIL_CONNECT_TIMEOUT_MS +
   * RAIL_READ_TIMEOUT_MS + 500 ms), below the executor's submit read timeout
   * (RAIL_READ_TIMEOUT_MS + 2 s) so its answer arrives while someone listens.
   */
  @EnvInt({ optional: true, min: 1, max: 300_000 }) readonly RAIL_PROXY_REQUEST_BUDGET_MS?: number;
  @EnvInt({ default: 1_000, min: 0, max: 60_000 })
  readonly RAIL_PROXY_UNAVAILABLE_RETRY_AFTER_MS!: number;
  @EnvBool({ default: true }) readonly RAIL_PROXY_FENCING_ENABLED!: boolean;
  @EnvBool({ default: false }) readonly DLOCK_HARNESS!: boolean;
  /** Test-only: sleep between committing the intent and presenting it (harness only). */
  @EnvInt({ default: 0, min: 0, max: 600_000 })
  readonly RAIL_PROXY_TEST_PAUSE_AFTER_INTENT_MS!: number;
}

type Derived = 'RAIL_READ_TIMEOUT_MIN_MS' | 'RAIL_PROXY_REQUEST_BUDGET_MS';
export type RailProxyConfig = Omit<RailProxyEnv, Derived> & {
  readonly [K in Derived]: number;
};
/** Kept back from every deadline for the answer's way back to the caller. */
export const RAIL_DEADLINE_MARGIN_MS = 100;
/** The default budget's room for admission and recording around the rail call. */
const RAIL_PROXY_BUDGET_SLACK_MS = 500;
export const RAIL_PROXY_CONFIG = Symbol('RAIL_PROXY_CONFIG');

export function readRailProxyConfig(source: EnvSource): RailProxyConfig {
  const raw = validateEnv(RailProxyEnv, source);
  const config: RailProxyConfig = Object.freeze({
    ...raw,
    RAIL_READ_TIMEOUT_MIN_MS:
      raw.RAIL_READ_TIMEOUT_MIN_MS ?? Math.ceil(raw.RAIL_READ_TIMEOUT_MS / 4),
    RAIL_PROXY_REQUEST_BUDGET_MS:
      raw.RAIL_PROXY_REQUEST_BUDGET_MS ??
      raw.RAIL_CONNECT_TIMEOUT_MS + raw.RAIL_READ_TIMEOUT_MS + RAIL_PROXY_BUDGET_SLACK_MS,
  });
  // docs/rail.md, "Kill switch (harness only)".
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
