import { env, readEnv, type EnvOf } from '@dlock/config';
import { AUTH_ENV, CALLER_AUTH_ENV } from '@dlock/identity';

/** Every knob of the reconciler (docs/reconciler.md has the table). Read once at boot. */
export const RECONCILER_ENV = {
  PORT: env.int({ default: 8086, min: 0, max: 65535 }),
  ...AUTH_ENV,
  ...CALLER_AUTH_ENV,
  LOG_LEVEL: env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
  }),
  OWNER_ID: env.string({ default: 'reconciler', maxLength: 64, pattern: /^[\x20-\x7e]+$/ }),
  LOCK_SERVER_URL: env.peerUrl({ default: 'http://127.0.0.1:8081' }),
  PAYMENT_RESOURCE_URL: env.peerUrl({ default: 'http://127.0.0.1:8082' }),
  RAIL_STUB_URL: env.peerUrl({ default: 'http://127.0.0.1:8085' }),
  PAYDB_URL: env.postgresUrl(),
  PROXYDB_URL: env.postgresUrl(),
  /**
   * Read-only view of lockdb, for the lock_revocation audit chain only
   * (docs/audit.md). Unset: that chain is not verified by the reconciler.
   */
  LOCKDB_URL: env.optionalPostgresUrl(),
  /** Fixed delay between two verifications of every audit chain (each reads the whole chain). */
  RECONCILER_AUDIT_INTERVAL_MS: env.int({ default: 300_000, min: 100, max: 86_400_000 }),
  /** Revocation fencing raises the proxy's high-water marks (docs/reconciler.md). */
  RAIL_PROXY_URL: env.peerUrl({ default: 'http://127.0.0.1:8083' }),
  /** Fixed delay between two revocation-fencing + token-source passes. */
  RECONCILER_FENCING_INTERVAL_MS: env.int({ default: 2_000, min: 100, max: 600_000 }),
  /** A revocation younger than this is re-read each pass (pg floors can commit out of order). */
  RECONCILER_REVOCATION_SETTLE_MS: env.int({ default: 60_000, min: 0, max: 3_600_000 }),
  /** The lock key the token-source check acquires and releases each pass. */
  RECONCILER_TOKEN_PROBE_KEY: env.string({
    default: 'dlock:token-probe',
    maxLength: 128,
    pattern: /^[a-zA-Z0-9:._-]+$/,
  }),
  /** Fixed delay between two resolution passes over RAIL_AMBIGUOUS payouts. */
  RECONCILER_INTERVAL_MS: env.int({ default: 10_000, min: 100, max: 3_600_000 }),
  /** Fixed delay between two runs of the detective checks. */
  RECONCILER_CHECK_INTERVAL_MS: env.int({ default: 30_000, min: 100, max: 3_600_000 }),
  /**
   * Time after the rail attempt ended before "no transfer" counts as evidence
   * of absence. The rail's own window (reported by S2) wins when it is longer.
   */
  RECONCILER_SETTLEMENT_WINDOW_MS: env.int({ default: 5_000, min: 0, max: 7 * 86_400_000 }),
  /** an ambiguous payout older than this is escalated to a human. */
  RECONCILER_AMBIGUOUS_SLA_MS: env.int({
    default: 4 * 60 * 60 * 1000,
    min: 0,
    max: 30 * 86_400_000,
  }),
  /** Payouts resolved per pass at most (bounds one pass's work). */
  RECONCILER_BATCH_MAX: env.int({ default: 500, min: 1, max: 10_000 }),
  /**
   * A submission younger than this is not yet judged by the claim-token check:
   * a recovering holder records its token in paydb right after the proxy answers.
   */
  RECONCILER_TOKEN_MATCH_GRACE_MS: env.int({ default: 60_000, min: 0, max: 86_400_000 }),
  /** C3 §3.8 reconciler -> databases: 1 s connect, 30 s per statement, 3 tries. */
  RECONCILER_DB_CONNECT_TIMEOUT_MS: env.int({ default: 1_000, min: 100, max: 60_000 }),
  RECONCILER_DB_STATEMENT_TIMEOUT_MS: env.int({ default: 30_000, min: 100, max: 600_000 }),
  RECONCILER_DB_TRIES: env.int({ default: 3, min: 1, max: 10 }),
  RECONCILER_DB_POOL_MAX: env.int({ default: 2, min: 1, max: 20 }),
  /** Lock session and lease for the account lock the reconciler takes like any writer. */
  LOCK_SESSION_TTL_MS: env.int({ default: 15_000, min: 1_000, max: 60_000 }),
  LOCK_DEFAULT_TTL_MS: env.int({ default: 15_000, min: 1_000, max: 60_000 }),
  LOCK_CLIENT_SAFETY_MARGIN: env.number({ default: 0.3, min: 0.01, max: 0.66 }),
  /** Rail sweep (docs/reconciler.md): fixed delay between two passes. */
  RECONCILER_SWEEP_INTERVAL_MS: env.int({ default: 30_000, min: 100, max: 3_600_000 }),
  /** A terminal payout is first looked up at the rail this long after it became terminal. */
  RECONCILER_SWEEP_SETTLE_MS: env.int({ default: 60_000, min: 0, max: 86_400_000 }),
  /** How far back the sweep looks again: terminal payouts younger than this are re-checked. */
  RECONCILER_SWEEP_LOOKBACK_MS: env.int({
    default: 7 * 86_400_000,
    min: 0,
    max: 90 * 86_400_000,
  }),
  /** Delay between two re-check rounds over the look-back window. */
  RECONCILER_SWEEP_RECHECK_INTERVAL_MS: env.int({
    default: 6 * 3_600_000,
    min: 100,
    max: 7 * 86_400_000,
  }),
  /** Rail look-ups per sweep pass at most (bounds one pass's work and the load on the rail). */
  RECONCILER_SWEEP_BATCH_MAX: env.int({ default: 200, min: 1, max: 10_000 }),
};

export type ReconcilerConfig = EnvOf<typeof RECONCILER_ENV>;
export const RECONCILER_CONFIG = Symbol('RECONCILER_CONFIG');

export function readReconcilerConfig(
  source: Record<string, string | undefined> = process.env,
): ReconcilerConfig {
  return readEnv(RECONCILER_ENV, source);
}
