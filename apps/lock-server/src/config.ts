import { EnvError, env, readEnv, type EnvOf } from '@dlock/config';
import { AUTH_ENV } from '@dlock/identity';
import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
} from '@dlock/lock-api';
import { readEtcdConfig, type EtcdStoreConfig } from './store/etcd/etcd-config';

/** Every environment variable the lock-server reads (docs/lock-server.md has the table). */
const schema = {
  PORT: env.int({ default: 8081, min: 0, max: 65535 }),
  ...AUTH_ENV,
  LOG_LEVEL: env.oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
  }),
  LOCK_BACKEND: env.oneOf(['pg', 'etcd'], { default: 'pg' }),
  LOCKDB_URL: env.optionalPostgresUrl(),
  LOCKDB_POOL_MAX: env.int({ default: 20, min: 1, max: 200 }),
  /** Per-statement budget; C3 §3.8 gives callers a 2 s read timeout, so stay below it. */
  LOCKDB_STATEMENT_TIMEOUT_MS: env.int({ default: 1500, min: 100, max: 30_000 }),
  LOCKDB_CONNECT_TIMEOUT_MS: env.int({ default: 1000, min: 100, max: 30_000 }),
  /** How often the pg backend checks that the database answers and is writable. */
  LOCKDB_PROBE_INTERVAL_MS: env.int({ default: 1000, min: 100, max: 60_000 }),
  ETCD_ENDPOINTS: env.optionalString(),
  /** Default session TTL, and the ceiling a requested TTL is clamped down to. */
  LOCK_SESSION_TTL_MS: env.int({
    default: 15_000,
    min: SESSION_TTL_MIN_MS,
    max: SESSION_TTL_MAX_MS,
  }),
  LOCK_SESSION_TTL_MAX_MS: env.int({
    default: SESSION_TTL_MAX_MS,
    min: SESSION_TTL_MIN_MS,
    max: SESSION_TTL_MAX_MS,
  }),
  LOCK_DEFAULT_TTL_MS: env.int({ default: 15_000, min: LOCK_TTL_MIN_MS, max: LOCK_TTL_MAX_MS }),
  /** How long an expired session is remembered (410 SESSION_EXPIRED) before it reads as unknown (404). */
  LOCK_SESSION_RETENTION_MS: env.int({ default: 3_600_000, min: 60_000, max: 604_800_000 }),
  /** Server-side waiters allowed per key in this process; beyond it 429 CONTENTION_EXCEEDED. */
  LOCK_WAITERS_MAX: env.int({ default: 64, min: 0, max: 10_000 }),
  /** A waiting acquire re-tries at least this often (catches releases made by other replicas). */
  LOCK_WAIT_POLL_MS: env.int({ default: 100, min: 10, max: 5_000 }),
  /** Requests one caller identity may make per LOCK_RATE_WINDOW_MS (docs/security.md); release is exempt. */
  LOCK_RATE_LIMIT: env.int({ default: 2_000, min: 1, max: 1_000_000 }),
  LOCK_RATE_WINDOW_MS: env.int({ default: 1_000, min: 100, max: 3_600_000 }),
  /** retryAfterMillis on 503 NOT_LEADER. */
  LOCK_NOT_LEADER_RETRY_AFTER_MS: env.int({ default: 1000, min: 1, max: 60_000 }),
  /** retryAfterMillis on 429 CONTENTION_EXCEEDED. */
  LOCK_CONTENTION_RETRY_AFTER_MS: env.int({ default: 500, min: 1, max: 60_000 }),
  /** Upper bound of retryAfterMillis on 409 LOCK_CONTENDED (otherwise the holder's remaining lease). */
  LOCK_CONTENDED_RETRY_AFTER_MAX_MS: env.int({ default: 1000, min: 1, max: 60_000 }),
};

export type LockServerConfig = EnvOf<typeof schema> & {
  /** The etcd backend's own settings, present when LOCK_BACKEND=etcd. */
  readonly etcd?: EtcdStoreConfig;
};

/** DI token of the frozen config. */
export const LOCK_SERVER_CONFIG = Symbol('LOCK_SERVER_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function loadConfig(
  source: Record<string, string | undefined> = process.env,
): LockServerConfig {
  const config = readEnv(schema, source);
  const problems: string[] = [];
  switch (config.LOCK_BACKEND) {
    case 'pg':
      if (!config.LOCKDB_URL) problems.push('LOCKDB_URL: is required when LOCK_BACKEND=pg');
      break;
    case 'etcd':
      if (!config.ETCD_ENDPOINTS)
        problems.push('ETCD_ENDPOINTS: is required when LOCK_BACKEND=etcd (comma-separated URLs)');
      break;
  }
  if (config.LOCK_SESSION_TTL_MS > config.LOCK_SESSION_TTL_MAX_MS) {
    problems.push('LOCK_SESSION_TTL_MS: must not exceed LOCK_SESSION_TTL_MAX_MS');
  }
  if (problems.length > 0) throw new EnvError(problems);
  if (config.LOCK_BACKEND === 'etcd') {
    return Object.freeze({ ...config, etcd: readEtcdConfig(source) });
  }
  return config;
}
