import {
  assertKillSwitchAllowed,
  EnvBool,
  EnvError,
  EnvInt,
  EnvPostgresUrl,
  type EnvSource,
  EnvString,
  RateLimitEnv,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { AuthEnv, GrantJwksEnv } from '@dlock/identity';
import { CLEARING_SHARDS_MAX } from './ledger/domain/ledger.rules';

export const PAYMENT_CONFIG = Symbol('PAYMENT_CONFIG');

/** Every variable payment-resource reads (docs/payment-resource.md has the table). */
export class PaymentEnv extends ServiceEnv(8082, RateLimitEnv('PAYMENT', GrantJwksEnv(AuthEnv))) {
  @EnvPostgresUrl() readonly PAYDB_URL!: string;
  /** This service's own keys for the payout instructions it signs (docs/rail.md, "Instructions"). */
  @EnvString({ maxLength: 1024 }) readonly INSTRUCTION_SIGNING_KEYS!: string;
  /**
   * The rail-proxy's public keys rail receipts are checked against (docs/rail.md,
   * "Receipts"): a JWKS file, or its /.well-known/jwks.json URL.
   */
  @EnvString({ maxLength: 2048 }) readonly RECEIPT_JWKS!: string;
  @EnvInt({ default: 10, min: 1, max: 200 }) readonly PAYDB_POOL_MAX!: number;
  /** Bounds every statement, including a wait on an account's row lock; below the request budget. */
  @EnvInt({ default: 2_000, min: 100, max: 600_000 }) readonly PAYDB_STATEMENT_TIMEOUT_MS!: number;
  /** A fenced write's own deadline, below the callers' 3 s read timeout (docs/payment-resource.md). */
  @EnvInt({ default: 2_800, min: 200, max: 600_000 }) readonly PAYMENT_REQUEST_BUDGET_MS!: number;
  /** The harness's negative control only (docs/payment-resource.md, "Kill switch (harness only)"). */
  @EnvBool({ default: true }) readonly PAYMENT_FENCING_ENABLED!: boolean;
  /** An ambiguous payout may be abandoned by an operator after this long. */
  @EnvInt({ default: 4 * 60 * 60 * 1000, min: 0, max: 30 * 86_400_000 })
  readonly PAYOUT_AMBIGUOUS_SLA_MS!: number;
  /** Clearing accounts per currency that take payout credit legs (1 = the single clearing-<CUR>). */
  @EnvInt({ default: 1, min: 1, max: CLEARING_SHARDS_MAX })
  readonly PAYMENT_CLEARING_SHARDS!: number;
}

export type PaymentConfig = PaymentEnv;

/** Validates the environment once at boot; throws EnvError naming every bad variable. */
export function readPaymentConfig(source: EnvSource): PaymentConfig {
  const config = validateEnv(PaymentEnv, source);
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
