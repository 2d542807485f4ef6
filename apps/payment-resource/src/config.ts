import { EnvError, assertKillSwitchAllowed, env, readEnv, type EnvOf } from '@dlock/config';
import { AUTH_ENV } from '@dlock/identity';
import { CLEARING_SHARDS_MAX } from './domain/ledger';

export const PAYMENT_CONFIG = Symbol('PAYMENT_CONFIG');

const schema = {
  PORT: env.int({ default: 8082, min: 0, max: 65535 }),
  ...AUTH_ENV,
  LOG_LEVEL: env.oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
    default: 'info',
  }),
  PAYDB_URL: env.postgresUrl(),
  PAYDB_POOL_MAX: env.int({ default: 10, min: 1, max: 200 }),
  // Bounds every statement, including a wait on an account's row lock; below the request budget.
  PAYDB_STATEMENT_TIMEOUT_MS: env.int({ default: 2_000, min: 100, max: 600_000 }),
  // A fenced write's own deadline, below the callers' 3 s read timeout (docs/payment-resource.md).
  PAYMENT_REQUEST_BUDGET_MS: env.int({ default: 2_800, min: 200, max: 600_000 }),
  // The harness's negative control only (DECISIONS §7).
  PAYMENT_FENCING_ENABLED: env.bool({ default: true }),
  // an ambiguous payout may be abandoned by an operator after this long.
  PAYOUT_AMBIGUOUS_SLA_MS: env.int({ default: 4 * 60 * 60 * 1000, min: 0, max: 30 * 86_400_000 }),
  // Clearing accounts per currency that take payout credit legs (1 = the single clearing-<CUR>).
  PAYMENT_CLEARING_SHARDS: env.int({ default: 1, min: 1, max: CLEARING_SHARDS_MAX }),
};

export type PaymentConfig = EnvOf<typeof schema>;

/** Reads and validates the environment once; throws EnvError naming every bad variable. */
export function readPaymentConfig(
  source: Record<string, string | undefined> = process.env,
): PaymentConfig {
  const config = readEnv(schema, source);
  assertKillSwitchAllowed('PAYMENT_FENCING_ENABLED', config.PAYMENT_FENCING_ENABLED, source);
  // Budgets shrink inward: a statement that outlives the request's budget answers nobody.
  if (config.PAYDB_STATEMENT_TIMEOUT_MS >= config.PAYMENT_REQUEST_BUDGET_MS) {
    throw new EnvError([
      `PAYDB_STATEMENT_TIMEOUT_MS (${config.PAYDB_STATEMENT_TIMEOUT_MS}) must be below ` +
        `PAYMENT_REQUEST_BUDGET_MS (${config.PAYMENT_REQUEST_BUDGET_MS})`,
    ]);
  }
  return config;
}
