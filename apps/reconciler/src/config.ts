import {
  EnvInt,
  EnvPeerUrl,
  EnvPostgresUrl,
  type EnvSource,
  EnvString,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { CallerAuthEnv, GrantJwksEnv } from '@dlock/identity';
import { LockClientEnv } from '@dlock/payout-contract';
import { DB_TRIES_DEFAULT } from './persistence/db-retry.rules';

/** Every knob of the reconciler (docs/reconciler.md has the table). Read once at boot. */
export class ReconcilerEnv extends ServiceEnv(
  8086,
  // The account lock the reconciler takes like any writer, under its own name; GRANT_JWKS
  // verifies every grant proof the rail-proxy kept (docs/reconciler.md, `submission_grant_proven`).
  LockClientEnv({ ownerId: 'reconciler', lockTtlMs: 15_000 }, GrantJwksEnv(CallerAuthEnv)),
) {
  @EnvPeerUrl({ default: 'http://127.0.0.1:8082' }) readonly PAYMENT_RESOURCE_URL!: string;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8085' }) readonly RAIL_STUB_URL!: string;
  @EnvPostgresUrl() readonly PAYDB_URL!: string;
  @EnvPostgresUrl() readonly PROXYDB_URL!: string;
  /**
   * Read-only view of lockdb, for the lock_revocation audit chain only
   * (docs/audit.md). Unset: that chain is not verified by the reconciler.
   */
  @EnvPostgresUrl({ optional: true }) readonly LOCKDB_URL?: string;
  /**
   * Fixed delay between two checkpointed verifications of every audit chain:
   * each verifies what was appended since the last one (docs/audit.md, "Checkpoints").
   */
  @EnvInt({ default: 300_000, min: 100, max: 86_400_000 })
  readonly RECONCILER_AUDIT_INTERVAL_MS!: number;
  /** How often a pass also walks every chain whole (each reads the whole history); 0: never. */
  @EnvInt({ default: 7 * 86_400_000, min: 0, max: 90 * 86_400_000 })
  readonly RECONCILER_AUDIT_FULL_INTERVAL_MS!: number;
  /** A link younger than this waits for the next pass: a write begun earlier may commit after it. */
  @EnvInt({ default: 60_000, min: 0, max: 3_600_000 })
  readonly RECONCILER_AUDIT_SETTLE_MS!: number;
  /**
   * Where the checkpoints are kept across restarts (a JSON file the process may
   * write); unset: in memory, and the first pass after a start verifies from the beginning.
   */
  @EnvString({ optional: true, maxLength: 4096, pattern: /^[^\0]+$/ })
  readonly RECONCILER_AUDIT_CHECKPOINT_FILE?: string;
  /**
   * Where the detective checks' cursors are kept across restarts (a JSON file the process may
   * write); unset: in memory, and the first run after a start reads every record (docs/scale.md).
   */
  @EnvString({ optional: true, maxLength: 4096, pattern: /^[^\0]+$/ })
  readonly RECONCILER_CHECK_CURSOR_FILE?: string;
  /** Revocation fencing raises the proxy's high-water marks (docs/reconciler.md). */
  @EnvPeerUrl({ default: 'http://127.0.0.1:8083' }) readonly RAIL_PROXY_URL!: string;
  /** Fixed delay between two revocation-fencing + token-source passes. */
  @EnvInt({ default: 2_000, min: 100, max: 600_000 })
  readonly RECONCILER_FENCING_INTERVAL_MS!: number;
  /** A revocation younger than this is re-read each pass (pg floors can commit out of order). */
  @EnvInt({ default: 60_000, min: 0, max: 3_600_000 })
  readonly RECONCILER_REVOCATION_SETTLE_MS!: number;
  /** The lock key the token-source check acquires and releases each pass. */
  @EnvString({ default: 'dlock:token-probe', maxLength: 128, pattern: /^[a-zA-Z0-9:._-]+$/ })
  readonly RECONCILER_TOKEN_PROBE_KEY!: string;
  /** Fixed delay between two resolution passes over RAIL_AMBIGUOUS payouts. */
  @EnvInt({ default: 10_000, min: 100, max: 3_600_000 }) readonly RECONCILER_INTERVAL_MS!: number;
  /** Fixed delay between two runs of the detective checks. */
  @EnvInt({ default: 30_000, min: 100, max: 3_600_000 })
  readonly RECONCILER_CHECK_INTERVAL_MS!: number;
  /**
   * The detective checks over kept records read what was written since their
   * last run, less this margin (a write begun earlier may commit later): docs/scale.md.
   */
  @EnvInt({ default: 60_000, min: 0, max: 3_600_000 })
  readonly RECONCILER_CHECK_SETTLE_MS!: number;
  /**
   * Time after the rail attempt ended before "no transfer" counts as evidence
   * of absence. The rail's own window (reported by S2) wins when it is longer.
   */
  @EnvInt({ default: 5_000, min: 0, max: 7 * 86_400_000 })
  readonly RECONCILER_SETTLEMENT_WINDOW_MS!: number;
  /** An ambiguous payout older than this is escalated to a human. */
  @EnvInt({ default: 4 * 60 * 60 * 1000, min: 0, max: 30 * 86_400_000 })
  readonly RECONCILER_AMBIGUOUS_SLA_MS!: number;
  /** Payouts resolved per pass at most (bounds one pass's work). */
  @EnvInt({ default: 500, min: 1, max: 10_000 }) readonly RECONCILER_BATCH_MAX!: number;
  /**
   * A submission younger than this is not yet judged by the claim-token check:
   * a recovering holder records its token in paydb right after the proxy answers.
   */
  @EnvInt({ default: 60_000, min: 0, max: 86_400_000 })
  readonly RECONCILER_TOKEN_MATCH_GRACE_MS!: number;
  /** Its database budgets (docs/reconciler.md): 1 s connect, 30 s per statement, 4 tries (3 retries). */
  @EnvInt({ default: 1_000, min: 100, max: 60_000 })
  readonly RECONCILER_DB_CONNECT_TIMEOUT_MS!: number;
  @EnvInt({ default: 30_000, min: 100, max: 600_000 })
  readonly RECONCILER_DB_STATEMENT_TIMEOUT_MS!: number;
  @EnvInt({ default: DB_TRIES_DEFAULT, min: 1, max: 10 }) readonly RECONCILER_DB_TRIES!: number;
  @EnvInt({ default: 2, min: 1, max: 20 }) readonly RECONCILER_DB_POOL_MAX!: number;
  /** Rail sweep (docs/reconciler.md): fixed delay between two passes. */
  @EnvInt({ default: 30_000, min: 100, max: 3_600_000 })
  readonly RECONCILER_SWEEP_INTERVAL_MS!: number;
  /** A terminal payout is first looked up at the rail this long after it became terminal. */
  @EnvInt({ default: 60_000, min: 0, max: 86_400_000 })
  readonly RECONCILER_SWEEP_SETTLE_MS!: number;
  /** How far back the sweep looks again: terminal payouts younger than this are re-checked. */
  @EnvInt({ default: 7 * 86_400_000, min: 0, max: 90 * 86_400_000 })
  readonly RECONCILER_SWEEP_LOOKBACK_MS!: number;
  /** Delay between two re-check rounds over the look-back window. */
  @EnvInt({ default: 6 * 3_600_000, min: 100, max: 7 * 86_400_000 })
  readonly RECONCILER_SWEEP_RECHECK_INTERVAL_MS!: number;
  /** Rail look-ups per sweep pass at most (bounds one pass's work and the load on the rail). */
  @EnvInt({ default: 200, min: 1, max: 10_000 }) readonly RECONCILER_SWEEP_BATCH_MAX!: number;
}

export type ReconcilerConfig = ReconcilerEnv;
export const RECONCILER_CONFIG = Symbol('RECONCILER_CONFIG');

export function readReconcilerConfig(source: EnvSource): ReconcilerConfig {
  return validateEnv(ReconcilerEnv, source);
}
