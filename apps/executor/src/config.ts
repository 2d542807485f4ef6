import {
  EnvBool,
  EnvError,
  EnvInt,
  EnvPeerUrl,
  type EnvSource,
  EnvString,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { CallerAuthEnv } from '@dlock/identity';
import { ACCOUNT_ID_RULE, isAccountId, LockClientEnv } from '@dlock/payout-contract';
import { submitBudgetMs } from './execution/domain/lease.rules';
import { CRASH_POINTS, type CrashPoint } from './execution/domain/crash-points.types';

export { CRASH_POINTS, type CrashPoint } from './execution/domain/crash-points.types';

/** Every variable the executor reads (docs/executor.md has the table). */
export class ExecutorEnv extends ServiceEnv(
  8084,
  // A lease above the lock-server's 15 s default on purpose: it must cover the worst-case
  // submit (1 s + RAIL_READ_TIMEOUT_MS + 2 s) after the margin. OWNER_ID is required.
  LockClientEnv({ lockTtlMs: 20_000 }, CallerAuthEnv),
) {
  @EnvPeerUrl({ default: 'http://127.0.0.1:8082' }) readonly PAYMENT_RESOURCE_URL!: string;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8083' }) readonly RAIL_PROXY_URL!: string;
  /** Fixed delay between two polling passes. */
  @EnvInt({ default: 1_000, min: 1, max: 600_000 }) readonly EXECUTOR_POLL_INTERVAL_MS!: number;
  /** Accounts worked on at once (one payout per account at a time). */
  @EnvInt({ default: 8, min: 1, max: 256 }) readonly EXECUTOR_CONCURRENCY!: number;
  /** Payouts fetched per state per pass (P1 limit). */
  @EnvInt({ default: 100, min: 1, max: 500 }) readonly EXECUTOR_BATCH_SIZE!: number;
  /** How often a pass also polls CLAIMED, RAIL_SUBMITTED and RAIL_ACKED (recovery by state). */
  @EnvInt({ default: 5_000, min: 1, max: 3_600_000 })
  readonly EXECUTOR_RECOVERY_INTERVAL_MS!: number;
  /** Upper bound on waiting for in-flight payouts at shutdown. */
  @EnvInt({ default: 20_000, min: 0, max: 600_000 }) readonly EXECUTOR_SHUTDOWN_GRACE_MS!: number;
  /** Must equal the proxy's RAIL_READ_TIMEOUT_MS: the submit budget is derived from it (docs/rail.md, "Deadlines"). */
  @EnvInt({ default: 8_000, min: 1, max: 120_000 }) readonly RAIL_READ_TIMEOUT_MS!: number;
  @EnvBool({ default: false }) readonly DLOCK_HARNESS!: boolean;
  // Harness-only knobs (refused unless DLOCK_HARNESS=1).
  @EnvBool({ default: false }) readonly EXECUTOR_SKIP_LIVENESS_CHECK!: boolean;
  @EnvInt({ default: 0, min: 0, max: 600_000 }) readonly EXECUTOR_PAUSE_BEFORE_SUBMIT_MS!: number;
  @EnvString({ optional: true }) readonly EXECUTOR_CRASH_AT?: string;
  @EnvString({ optional: true }) readonly EXECUTOR_ACCOUNT_ID?: string;
}

export interface ExecutorConfig extends Omit<ExecutorEnv, 'EXECUTOR_CRASH_AT'> {
  readonly EXECUTOR_CRASH_AT: CrashPoint | undefined;
  /** Worst-case duration of one submit through the proxy (docs/rail.md, "Deadlines"). */
  readonly submitBudgetMs: number;
}

export const EXECUTOR_CONFIG = Symbol('EXECUTOR_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readExecutorConfig(source: EnvSource): ExecutorConfig {
  const raw = validateEnv(ExecutorEnv, source);
  const problems: string[] = [];
  const crashAt = raw.EXECUTOR_CRASH_AT;
  if (crashAt !== undefined && !(CRASH_POINTS as readonly string[]).includes(crashAt)) {
    problems.push(`EXECUTOR_CRASH_AT: must be one of ${CRASH_POINTS.join(', ')}, got "${crashAt}"`);
  }
  if (raw.EXECUTOR_ACCOUNT_ID !== undefined && !isAccountId(raw.EXECUTOR_ACCOUNT_ID)) {
    problems.push(`EXECUTOR_ACCOUNT_ID: must be an account id (${ACCOUNT_ID_RULE})`);
  }
  if (!raw.DLOCK_HARNESS) {
    const harnessOnly: [string, boolean][] = [
      ['EXECUTOR_SKIP_LIVENESS_CHECK', raw.EXECUTOR_SKIP_LIVENESS_CHECK],
      ['EXECUTOR_PAUSE_BEFORE_SUBMIT_MS', raw.EXECUTOR_PAUSE_BEFORE_SUBMIT_MS > 0],
      ['EXECUTOR_CRASH_AT', crashAt !== undefined],
      ['EXECUTOR_ACCOUNT_ID', raw.EXECUTOR_ACCOUNT_ID !== undefined],
    ];
    for (const [name, set] of harnessOnly) {
      if (set) problems.push(`${name}: is a harness-only knob, refused unless DLOCK_HARNESS=1`);
    }
  }
  const budgetMs = submitBudgetMs(raw.RAIL_READ_TIMEOUT_MS);
  // The local lease after a fresh acquire must cover one worst-case submit, or no payout ever reaches the rail.
  if (raw.LOCK_DEFAULT_TTL_MS * (1 - raw.LOCK_CLIENT_SAFETY_MARGIN) <= budgetMs) {
    problems.push(
      `LOCK_DEFAULT_TTL_MS: ${raw.LOCK_DEFAULT_TTL_MS} ms × (1 − LOCK_CLIENT_SAFETY_MARGIN ${raw.LOCK_CLIENT_SAFETY_MARGIN}) ` +
        `must exceed the submit budget of ${budgetMs} ms (1 s + RAIL_READ_TIMEOUT_MS + 2 s)`,
    );
  }
  if (problems.length > 0) throw new EnvError(problems);
  return Object.freeze({
    ...raw,
    EXECUTOR_CRASH_AT: crashAt as CrashPoint | undefined,
    submitBudgetMs: budgetMs,
  });
}
