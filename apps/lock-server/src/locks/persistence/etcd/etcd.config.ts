import { EnvError, EnvInt, EnvOneOf, EnvString, validateEnv, type EnvSource } from '@dlock/config';

/** What the etcd backend takes from the lock-server's shared settings (config.ts). */
export interface EtcdBackendSettings extends EtcdStoreConfig {
  /** retryAfterMillis on 503 NOT_LEADER (LOCK_NOT_LEADER_RETRY_AFTER_MS). */
  notLeaderRetryAfterMs: number;
  /** How long an ended session answers 410 before 404 (LOCK_SESSION_RETENTION_MS). */
  sessionRetentionMs: number;
}

/**
 * Configuration of the etcd backend (LOCK_BACKEND=etcd). Read once at boot by
 * the lock-server's config; the store receives the frozen result.
 */
export interface EtcdStoreConfig {
  /** Client URLs of the etcd members (ETCD_ENDPOINTS, comma-separated). */
  endpoints: string[];
  /** Every key the backend writes lives under this prefix. */
  keyPrefix: string;
  /** Deadline of one etcd call. */
  callTimeoutMs: number;
  /** An idempotent call unanswered this long is sent again (failover; docs/lock-server-etcd.md). */
  resendAfterMs: number;
  /** Budget of one store operation (up to ~4 etcd calls); below the 2 s read timeout of docs/contract.md. */
  opTimeoutMs: number;
  /** Readiness probe deadline (a linearizable read must answer within it). */
  readyTimeoutMs: number;
  /** `tuned` (docs/lock-server-etcd.md) or etcd3's stock policies, kept for the failover benchmark. */
  faultHandling: 'tuned' | 'default';
}

/** The etcd backend's variables (docs/lock-server-etcd.md). */
export class EtcdEnv {
  @EnvString({ default: 'http://127.0.0.1:2379', maxLength: 4096 })
  readonly ETCD_ENDPOINTS!: string;
  @EnvString({ default: 'dlock/', pattern: /^[a-zA-Z0-9:._/-]{1,64}$/ })
  readonly ETCD_KEY_PREFIX!: string;
  @EnvInt({ default: 1_000, min: 100, max: 10_000 }) readonly ETCD_CALL_TIMEOUT_MS!: number;
  @EnvInt({ default: 250, min: 50, max: 10_000 }) readonly ETCD_RESEND_AFTER_MS!: number;
  @EnvInt({ default: 1_500, min: 100, max: 30_000 }) readonly ETCD_OP_TIMEOUT_MS!: number;
  @EnvInt({ default: 1_000, min: 100, max: 10_000 }) readonly ETCD_READY_TIMEOUT_MS!: number;
  @EnvOneOf(['tuned', 'default'], { default: 'tuned' })
  readonly ETCD_FAULT_HANDLING!: 'tuned' | 'default';
}

/** Parses ETCD_ENDPOINTS: comma-separated http(s) URLs, at least one. */
export function parseEndpoints(raw: string): string[] {
  const endpoints = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const bad = endpoints.filter((e) => {
    try {
      const url = new URL(e);
      return !(url.protocol === 'http:' || url.protocol === 'https:') || url.port === '';
    } catch {
      return true;
    }
  });
  return bad.length === 0 && endpoints.length > 0 ? endpoints : [];
}

/** The etcd variables of the lock-server's environment; throws EnvError naming a bad one. */
export function readEtcdConfig(source: EnvSource): EtcdStoreConfig {
  const raw = validateEnv(EtcdEnv, source);
  const endpoints = parseEndpoints(raw.ETCD_ENDPOINTS);
  if (endpoints.length === 0) {
    throw new EnvError([
      `ETCD_ENDPOINTS: must be comma-separated http(s)://host:port URLs, got "${raw.ETCD_ENDPOINTS}"`,
    ]);
  }
  return Object.freeze({
    endpoints,
    keyPrefix: raw.ETCD_KEY_PREFIX.endsWith('/') ? raw.ETCD_KEY_PREFIX : `${raw.ETCD_KEY_PREFIX}/`,
    callTimeoutMs: raw.ETCD_CALL_TIMEOUT_MS,
    resendAfterMs: raw.ETCD_RESEND_AFTER_MS,
    opTimeoutMs: raw.ETCD_OP_TIMEOUT_MS,
    readyTimeoutMs: raw.ETCD_READY_TIMEOUT_MS,
    faultHandling: raw.ETCD_FAULT_HANDLING,
  });
}
