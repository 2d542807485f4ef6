import { EnvError, env, readEnv, type EnvOf } from '@dlock/config';
import { AUTH_ENV, CALLER_AUTH_ENV } from '@dlock/identity';
import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  OWNER_ID_MAX_LENGTH,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
} from '@dlock/lock-api';
import { ACCOUNT_ID_RULE, isAccountId } from '@dlock/payout-contract';
import { submitBudgetMs } from './execution/lease';

/** Where the harness may make a worker SIGKILL itself (DLOCK_HARNESS=1 only). */
export const CRASH_POINTS = [
  'after-claim',
  'after-submitted',
  'after-submit',
  'after-ack',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every variable the executor reads (docs/executor.md has the table). */
const schema = {
  PORT: env.int({ default: 8084, min: 0, max: 65535 }),
  ...AUTH_ENV,
  ...CALLER_AUTH_ENV,
  LOG_LEVEL: env.oneOf(LOG_LEVELS, { default: 'info' }),
  OWNER_ID: env.string({ maxLength: OWNER_ID_MAX_LENGTH, pattern: /^[\x20-\x7e]+$/ }),
  LOCK_SERVER_URL: env.peerUrl({ default: 'http://127.0.0.1:8081' }),
  PAYMENT_RESOURCE_URL: env.peerUrl({ default: 'http://127.0.0.1:8082' }),
  RAIL_PROXY_URL: env.peerUrl({ default: 'http://127.0.0.1:8083' }),
  LOCK_SESSION_TTL_MS: env.int({
    default: 15_000,
    min: SESSION_TTL_MIN_MS,
    max: SESSION_TTL_MAX_MS,
  }),
  // Above the lock-server's 15 s default on purpose: the lease must cover the
  // worst-case submit (1 s + RAIL_READ_TIMEOUT_MS + 2 s) after the margin.
  LOCK_DEFAULT_TTL_MS: env.int({ default: 20_000, min: LOCK_TTL_MIN_MS, max: LOCK_TTL_MAX_MS }),
  LOCK_CLIENT_SAFETY_MARGIN: env.number({ default: 0.3, min: 0.01, max: 0.66 }),
  /** Fixed delay between two polling passes. */
  EXECUTOR_POLL_INTERVAL_MS: env.int({ default: 1_000, min: 1, max: 600_000 }),
  /** Accounts worked on at once (one payout per account at a time). */
  EXECUTOR_CONCURRENCY: env.int({ default: 8, min: 1, max: 256 }),
  /** Payouts fetched per state per pass (P1 limit). */
  EXECUTOR_BATCH_SIZE: env.int({ default: 100, min: 1, max: 500 }),
  /** How often a pass also polls CLAIMED, RAIL_SUBMITTED and RAIL_ACKED (recovery by state). */
  EXECUTOR_RECOVERY_INTERVAL_MS: env.int({ default: 5_000, min: 1, max: 3_600_000 }),
  /** Upper bound on waiting for in-flight payouts at shutdown. */
  EXECUTOR_SHUTDOWN_GRACE_MS: env.int({ default: 20_000, min: 0, max: 600_000 }),
  /** Must equal the proxy's RAIL_READ_TIMEOUT_MS: the submit budget is derived from it (C3 §3.8). */
  RAIL_READ_TIMEOUT_MS: env.int({ default: 8_000, min: 1, max: 120_000 }),
  DLOCK_HARNESS: env.bool({ default: false }),
  // Harness-only knobs (refused unless DLOCK_HARNESS=1).
  EXECUTOR_SKIP_LIVENESS_CHECK: env.bool({ default: false }),
  EXECUTOR_PAUSE_BEFORE_SUBMIT_MS: env.int({ default: 0, min: 0, max: 600_000 }),
  EXECUTOR_CRASH_AT: env.optionalString(),
  EXECUTOR_ACCOUNT_ID: env.optionalString(),
};

type RawConfig = EnvOf<typeof schema>;

export interface ExecutorConfig extends Omit<RawConfig, 'EXECUTOR_CRASH_AT'> {
  readonly EXECUTOR_CRASH_AT: CrashPoint | undefined;
  /** Worst-case duration of one submit through the proxy (C3 §3.8). */
  readonly submitBudgetMs: number;
}

export const EXECUTOR_CONFIG = Symbol('EXECUTOR_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readExecutorConfig(
  source: Record<string, string | undefined> = process.env,
): ExecutorConfig {
  const raw = readEnv(schema, source);
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
