import {
  EnvError,
  EnvInt,
  EnvOneOf,
  EnvPostgresUrl,
  type EnvSource,
  EnvString,
  RateLimitEnv,
  ServiceEnv,
  validateEnv,
} from '@dlock/config';
import { AuthEnv } from '@dlock/identity';
import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
} from '@dlock/lock-api';
import { BROKEN_MODES } from './locks/persistence/broken-lock.store';
import { readEtcdConfig, type EtcdStoreConfig } from './locks/persistence/etcd/etcd.config';
import { parseFencePoints, type FencePointConfig } from './revocations/config/fence-points.config';

/** `memory` is the harness's (conformance suite, simulation): refused unless DLOCK_HARNESS=1. */
export const LOCK_BACKENDS = ['pg', 'etcd', 'memory'] as const;
export const LOCK_SERVER_BROKEN_MODES = ['off', ...BROKEN_MODES] as const;

/** Every environment variable the lock-server reads (docs/lock-server.md has the table). */
export class LockServerEnv extends ServiceEnv(8081, RateLimitEnv('LOCK', AuthEnv)) {
  @EnvOneOf(LOCK_BACKENDS, { default: 'pg' })
  readonly LOCK_BACKEND!: (typeof LOCK_BACKENDS)[number];
  @EnvPostgresUrl({ optional: true }) readonly LOCKDB_URL?: string;
  /**
   * The lock-server's own signing keys for grant proofs (docs/security.md,
   * "Signed grants"): a key-ring file shared by every replica.
   */
  @EnvString({ maxLength: 1024 }) readonly GRANT_SIGNING_KEYS!: string;
  @EnvInt({ default: 20, min: 1, max: 200 }) readonly LOCKDB_POOL_MAX!: number;
  /** Per-statement budget, below the callers' 2 s read timeout (docs/lock-server.md). */
  @EnvInt({ default: 1500, min: 100, max: 30_000 }) readonly LOCKDB_STATEMENT_TIMEOUT_MS!: number;
  @EnvInt({ default: 1000, min: 100, max: 30_000 }) readonly LOCKDB_CONNECT_TIMEOUT_MS!: number;
  /** How often the pg backend checks that the database answers and is writable. */
  @EnvInt({ default: 1000, min: 100, max: 60_000 }) readonly LOCKDB_PROBE_INTERVAL_MS!: number;
  @EnvString({ optional: true }) readonly ETCD_ENDPOINTS?: string;
  /**
   * The fence points a revoke presents its notice at before it answers, by key
   * prefix (docs/security.md, "Revocation notices"): a JSON array of
   * `{ name, prefix, url, audience? }`, parsed into `fencePoints`. A fence
   * point with an `audience` gets the lock-server's token for it from AUTH_TOKEN_DIR.
   */
  @EnvString({ optional: true, maxLength: 8192 }) readonly FENCE_POINTS?: string;
  @EnvString({ optional: true, maxLength: 1024 }) readonly AUTH_TOKEN_DIR?: string;
  /** Default session TTL, and the ceiling a requested TTL is clamped down to. */
  @EnvInt({ default: 15_000, min: SESSION_TTL_MIN_MS, max: SESSION_TTL_MAX_MS })
  readonly LOCK_SESSION_TTL_MS!: number;
  @EnvInt({ default: SESSION_TTL_MAX_MS, min: SESSION_TTL_MIN_MS, max: SESSION_TTL_MAX_MS })
  readonly LOCK_SESSION_TTL_MAX_MS!: number;
  @EnvInt({ default: 15_000, min: LOCK_TTL_MIN_MS, max: LOCK_TTL_MAX_MS })
  readonly LOCK_DEFAULT_TTL_MS!: number;
  /** How long an expired session is remembered (410 SESSION_EXPIRED) before it reads as unknown (404). */
  @EnvInt({ default: 3_600_000, min: 60_000, max: 604_800_000 })
  readonly LOCK_SESSION_RETENTION_MS!: number;
  /** Server-side waiters allowed per key in this process; beyond it 429 CONTENTION_EXCEEDED. */
  @EnvInt({ default: 64, min: 0, max: 10_000 }) readonly LOCK_WAITERS_MAX!: number;
  /** Server-side waiters one identity may have in this process, over all keys (docs/lock-server.md, "Limits"). */
  @EnvInt({ default: 32, min: 0, max: 10_000 }) readonly LOCK_WAITERS_PER_OWNER_MAX!: number;
  /** Server-side waiters in this process in all: each re-tries against the backend while it waits. */
  @EnvInt({ default: 256, min: 0, max: 100_000 }) readonly LOCK_WAITERS_TOTAL_MAX!: number;
  /**
   * Requests one identity may have in flight in this process; one more is 429
   * before its token is checked (docs/lock-server.md, "Limits"). Not below
   * LOCK_WAITERS_PER_OWNER_MAX: waiters are requests in flight too.
   */
  @EnvInt({ default: 64, min: 1, max: 100_000 })
  readonly LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX!: number;
  /** Live sessions one identity may have open; beyond it L1 is 429 (docs/lock-server.md, "Limits"). */
  @EnvInt({ default: 16, min: 1, max: 100_000 }) readonly LOCK_SESSIONS_PER_OWNER_MAX!: number;
  /** Live locks one identity may hold over all its sessions; beyond it L4 is 429. */
  @EnvInt({ default: 256, min: 1, max: 1_000_000 }) readonly LOCK_LOCKS_PER_OWNER_MAX!: number;
  /** A waiting acquire re-tries at least this often (catches releases made by other replicas). */
  @EnvInt({ default: 100, min: 10, max: 5_000 }) readonly LOCK_WAIT_POLL_MS!: number;
  /**
   * Requests without a valid token one source address may make per
   * LOCK_UNAUTHENTICATED_RATE_WINDOW_MS before they are answered 429 (docs/security.md, "Limits").
   */
  @EnvInt({ default: 200, min: 1, max: 1_000_000 })
  readonly LOCK_UNAUTHENTICATED_RATE_LIMIT!: number;
  @EnvInt({ default: 10_000, min: 100, max: 3_600_000 })
  readonly LOCK_UNAUTHENTICATED_RATE_WINDOW_MS!: number;
  /** `auth_refused` log lines per LOCK_UNAUTHENTICATED_RATE_WINDOW_MS; the rest are counted, not logged. */
  @EnvInt({ default: 20, min: 1, max: 100_000 }) readonly LOCK_REFUSAL_LOG_LINES_MAX!: number;
  /** retryAfterMillis on 503 NOT_LEADER. */
  @EnvInt({ default: 1000, min: 1, max: 60_000 }) readonly LOCK_NOT_LEADER_RETRY_AFTER_MS!: number;
  /** retryAfterMillis on 429 CONTENTION_EXCEEDED. */
  @EnvInt({ default: 500, min: 1, max: 60_000 }) readonly LOCK_CONTENTION_RETRY_AFTER_MS!: number;
  /** Upper bound of retryAfterMillis on 409 LOCK_CONTENDED (otherwise the holder's remaining lease). */
  @EnvInt({ default: 1000, min: 1, max: 60_000 })
  readonly LOCK_CONTENDED_RETRY_AFTER_MAX_MS!: number;
  /**
   * Harness only: a LockStore that breaks one rule on purpose, the negative
   * controls of the linearizability checker (docs/harness.md). Refused unless DLOCK_HARNESS=1.
   */
  @EnvOneOf(LOCK_SERVER_BROKEN_MODES, { default: 'off' })
  readonly LOCK_SERVER_BROKEN!: (typeof LOCK_SERVER_BROKEN_MODES)[number];
  /**
   * Harness only, with LOCK_BACKEND=memory: lock-servers in one process with
   * the same name share one memory backend (replicas of one "database").
   */
  @EnvString({ optional: true, maxLength: 64 }) readonly LOCK_MEMORY_INSTANCE?: string;
}

export type LockServerConfig = LockServerEnv & {
  /** The etcd backend's own settings, present when LOCK_BACKEND=etcd. */
  readonly etcd?: EtcdStoreConfig;
  /** FENCE_POINTS, parsed; empty when unset. */
  readonly fencePoints: readonly FencePointConfig[];
};

/** DI token of the frozen config. */
export const LOCK_SERVER_CONFIG = Symbol('LOCK_SERVER_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readLockServerConfig(source: EnvSource): LockServerConfig {
  const config = validateEnv(LockServerEnv, source);
  const problems: string[] = [];
  switch (config.LOCK_BACKEND) {
    case 'pg':
      if (!config.LOCKDB_URL) problems.push('LOCKDB_URL: is required when LOCK_BACKEND=pg');
      break;
    case 'etcd':
      if (!config.ETCD_ENDPOINTS)
        problems.push('ETCD_ENDPOINTS: is required when LOCK_BACKEND=etcd (comma-separated URLs)');
      break;
    case 'memory':
      break;
  }
  if (config.LOCK_BACKEND === 'memory' && source.DLOCK_HARNESS !== '1') {
    problems.push(
      'LOCK_BACKEND=memory is refused: it keeps nothing across a restart and is allowed only under DLOCK_HARNESS=1 (conformance suite, simulation)',
    );
  }
  if (config.LOCK_SERVER_BROKEN !== 'off' && source.DLOCK_HARNESS !== '1') {
    problems.push(
      `LOCK_SERVER_BROKEN=${config.LOCK_SERVER_BROKEN} is refused: it is allowed only under DLOCK_HARNESS=1 (the harness's negative controls)`,
    );
  }
  // The guards' URLs of before FENCE_POINTS: silently ignored, a revoke would stop fencing.
  for (const gone of ['PAYMENT_RESOURCE_URL', 'RAIL_PROXY_URL'])
    if (source[gone] !== undefined)
      problems.push(`${gone}: is no longer read by the lock-server: name it in FENCE_POINTS`);
  const fencePoints = parseFencePoints(config.FENCE_POINTS);
  problems.push(...fencePoints.problems);
  if (fencePoints.points.some((p) => p.audience) && config.AUTH_TOKEN_DIR === undefined) {
    problems.push('AUTH_TOKEN_DIR: is required by a fence point with an audience (its token)');
  }
  if (config.LOCK_SESSION_TTL_MS > config.LOCK_SESSION_TTL_MAX_MS) {
    problems.push('LOCK_SESSION_TTL_MS: must not exceed LOCK_SESSION_TTL_MAX_MS');
  }
  if (config.LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX < config.LOCK_WAITERS_PER_OWNER_MAX) {
    problems.push(
      'LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: must not be below LOCK_WAITERS_PER_OWNER_MAX (waiters are requests in flight)',
    );
  }
  if (problems.length > 0) throw new EnvError(problems);
  const read = { ...config, fencePoints: Object.freeze(fencePoints.points) };
  if (config.LOCK_BACKEND === 'etcd') {
    return Object.freeze({ ...read, etcd: readEtcdConfig(source) });
  }
  return Object.freeze(read);
}
