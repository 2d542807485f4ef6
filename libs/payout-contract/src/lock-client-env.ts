import { EnvInt, EnvNumber, EnvPeerUrl, EnvString, type EnvClass } from '@dlock/config/env';
import { fileTokenProvider, type TokenProvider } from '@dlock/identity';
import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  OWNER_ID_MAX_LENGTH,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
} from '@dlock/lock-api';

/** What differs between the services that take payout locks: who they are, how long a lease. */
export interface LockClientEnvDefaults {
  /** Unset: OWNER_ID is required. */
  ownerId?: string;
  lockTtlMs: number;
}

/**
 * The variables of a service that takes payout locks like any writer (the executor, the
 * reconciler): where the lock-server is, the owner it holds locks as, its session and lease
 * (docs/lock-client.md has what each does). The bounds are the lock-server's own.
 */
export function LockClientEnv<B extends EnvClass>(defaults: LockClientEnvDefaults, Base: B) {
  class LockClientVars extends Base {
    @EnvPeerUrl({ default: 'http://127.0.0.1:8081' }) readonly LOCK_SERVER_URL!: string;
    @EnvString({
      default: defaults.ownerId,
      maxLength: OWNER_ID_MAX_LENGTH,
      pattern: /^[\x20-\x7e]+$/,
    })
    readonly OWNER_ID!: string;
    @EnvInt({ default: 15_000, min: SESSION_TTL_MIN_MS, max: SESSION_TTL_MAX_MS })
    readonly LOCK_SESSION_TTL_MS!: number;
    @EnvInt({ default: defaults.lockTtlMs, min: LOCK_TTL_MIN_MS, max: LOCK_TTL_MAX_MS })
    readonly LOCK_DEFAULT_TTL_MS!: number;
    @EnvNumber({ default: 0.3, min: 0.01, max: 0.66 }) readonly LOCK_CLIENT_SAFETY_MARGIN!: number;
  }
  return LockClientVars;
}

type LockClientVars = InstanceType<ReturnType<typeof LockClientEnv<EnvClass>>>;

/** The lock client's options (LockClientModule.forRoot) from those variables and the service's tokens. */
export function lockClientOptions(env: LockClientVars & { readonly AUTH_TOKEN_DIR: string }): {
  baseUrl: string;
  ownerId: string;
  token: TokenProvider;
  safetyMargin: number;
  sessionTtlMs: number;
  lockTtlMs: number;
} {
  return {
    baseUrl: env.LOCK_SERVER_URL,
    ownerId: env.OWNER_ID,
    token: fileTokenProvider(env.AUTH_TOKEN_DIR, 'lock-server'),
    safetyMargin: env.LOCK_CLIENT_SAFETY_MARGIN,
    sessionTtlMs: env.LOCK_SESSION_TTL_MS,
    lockTtlMs: env.LOCK_DEFAULT_TTL_MS,
  };
}
