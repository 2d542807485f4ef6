import {
  EnvError,
  EnvInt,
  EnvLogLevel,
  EnvOneOf,
  EnvPeerUrl,
  type EnvSource,
  EnvString,
  EnvUrl,
  type LogLevel,
  validateEnv,
} from '@dlock/config';
import { DEV_ISSUER, OperatorAuthEnv } from '@dlock/identity';

const SIGN_IN_MODES = ['token', 'header'] as const;
const HOST_ENTRY = /^([a-z0-9.-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$/i;
const ALLOWED_HOSTS_MAX = 16;

/** Every variable the console reads (docs/console.md has the table). */
export class ConsoleEnv extends OperatorAuthEnv {
  /**
   * The console's own service tokens (identity `console`, docs/security.md):
   * its reads, and the outer token of every action it takes for a person.
   */
  @EnvString({ maxLength: 1024 }) readonly AUTH_TOKEN_DIR!: string;
  /**
   * Where people's tokens are verified when AUTH_OPERATOR_JWKS / _ISSUER are
   * unset, as on the services. The default is npm start's development issuer;
   * where that file does not exist no sign-in succeeds (fail closed).
   */
  @EnvString({ default: '.dlock/identity/jwks.json', maxLength: 2048 })
  readonly AUTH_JWKS!: string;
  @EnvString({ default: DEV_ISSUER, maxLength: 512 }) readonly AUTH_ISSUER!: string;
  /**
   * The services' authorisation policy (docs/security.md): a person signs in
   * only with a role in it, and sees what their roles let them read. Required:
   * without it nobody would be checked (fail closed).
   */
  @EnvString({ maxLength: 1024 }) readonly AUTH_POLICY!: string;
  @EnvInt({ default: 8090, min: 0, max: 65535 }) readonly PORT!: number;
  /** Loopback unless configured: only people on this machine reach the page (docs/console.md). */
  @EnvString({ default: '127.0.0.1', maxLength: 255 }) readonly CONSOLE_HOST!: string;
  /**
   * The Host names the console answers to, comma-separated `host[:port]`; any
   * other Host (DNS rebinding) or Origin is 403. Empty: 127.0.0.1, localhost
   * and [::1] with the port, and CONSOLE_HOST when it is one address.
   */
  @EnvString({ default: '', maxLength: 2048 }) readonly CONSOLE_ALLOWED_HOSTS!: string;
  /** `token`: a person pastes their token; `header`: a proxy in front (IAP, OIDC) sends it. */
  @EnvOneOf(SIGN_IN_MODES, { default: 'token' })
  readonly CONSOLE_SIGN_IN!: (typeof SIGN_IN_MODES)[number];
  /** The header the proxy puts the person's JWT in (`Bearer ` optional), for `header` sign-in. */
  @EnvString({ default: 'x-goog-iap-jwt-assertion', maxLength: 64, pattern: /^[a-z0-9-]+$/ })
  readonly CONSOLE_SIGN_IN_HEADER!: string;
  /** People signed in at once; one more sign-in is 503 until one signs out or expires. */
  @EnvInt({ default: 64, min: 1, max: 10_000 }) readonly CONSOLE_SESSIONS_MAX!: number;
  /** Sessions of one person; a sign-in beyond it ends that person's oldest session. */
  @EnvInt({ default: 4, min: 1, max: 100 }) readonly CONSOLE_SESSIONS_PER_SUBJECT_MAX!: number;
  /** A session ends when its token expires, and at the latest after this long. */
  @EnvInt({ default: 43_200_000, min: 60_000, max: 86_400_000 })
  readonly CONSOLE_SESSION_MAX_MS!: number;
  @EnvLogLevel() readonly LOG_LEVEL!: LogLevel;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8081' }) readonly LOCK_SERVER_URL!: string;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8082' }) readonly PAYMENT_RESOURCE_URL!: string;
  @EnvPeerUrl({ default: 'http://127.0.0.1:8083' }) readonly RAIL_PROXY_URL!: string;
  /** Comma-separated executor base URLs whose safety events the feed shows (may be empty). */
  @EnvString({ default: '', maxLength: 4096 }) readonly EXECUTOR_URLS!: string;
  @EnvUrl({ optional: true }) readonly RECONCILER_URL?: string;
  /** How often the feed asks each service for new safety events. */
  @EnvInt({ default: 1_000, min: 100, max: 60_000 }) readonly CONSOLE_EVENT_POLL_MS!: number;
  /** Read budget of the calls no shared client makes (connect is a quarter of it). */
  @EnvInt({ default: 2_000, min: 100, max: 30_000 }) readonly CONSOLE_CALL_TIMEOUT_MS!: number;
  /** Safety events kept for a newly opened page. */
  @EnvInt({ default: 200, min: 1, max: 10_000 }) readonly CONSOLE_EVENT_BUFFER!: number;
  /** Browsers streaming the feed at once. */
  @EnvInt({ default: 32, min: 1, max: 1_000 }) readonly CONSOLE_SSE_CLIENTS_MAX!: number;
  /** Browsers one person streams the feed to at once; one more gets 503. */
  @EnvInt({ default: 4, min: 1, max: 100 }) readonly CONSOLE_SSE_CLIENTS_PER_SUBJECT_MAX!: number;
}

const EXECUTORS_MAX = 16;

export type ConsoleConfig = ConsoleEnv & {
  /** Every service the feed polls, by the name shown on the page. */
  readonly eventSources: readonly { name: string; url: string }[];
  /** CONSOLE_ALLOWED_HOSTS as a list, lower-case; empty means the defaults for the port. */
  readonly allowedHosts: readonly string[];
};

export const CONSOLE_CONFIG = Symbol('CONSOLE_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readConsoleConfig(source: EnvSource): ConsoleConfig {
  const raw = validateEnv(ConsoleEnv, source);
  const executors = raw.EXECUTOR_URLS.split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  const problems = executors.flatMap((u, i) =>
    isPlainHttpUrl(u) ? [] : [`EXECUTOR_URLS[${i}]: must be an http:// URL of a dlock service`],
  );
  if (executors.length > EXECUTORS_MAX)
    problems.push(`EXECUTOR_URLS: at most ${EXECUTORS_MAX} executors`);
  const allowedHosts = raw.CONSOLE_ALLOWED_HOSTS.split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  problems.push(
    ...allowedHosts.flatMap((h, i) =>
      HOST_ENTRY.test(h) ? [] : [`CONSOLE_ALLOWED_HOSTS[${i}]: must be host or host:port`],
    ),
  );
  if (allowedHosts.length > ALLOWED_HOSTS_MAX)
    problems.push(`CONSOLE_ALLOWED_HOSTS: at most ${ALLOWED_HOSTS_MAX} entries`);
  if (problems.length > 0) throw new EnvError(problems);
  const eventSources = [
    { name: 'lock-server', url: raw.LOCK_SERVER_URL },
    { name: 'payment-resource', url: raw.PAYMENT_RESOURCE_URL },
    { name: 'rail-proxy', url: raw.RAIL_PROXY_URL },
    ...executors.map((url, i) => ({
      name: executors.length > 1 ? `executor-${i + 1}` : 'executor',
      url,
    })),
    ...(raw.RECONCILER_URL === undefined ? [] : [{ name: 'reconciler', url: raw.RECONCILER_URL }]),
  ];
  return Object.freeze({ ...raw, eventSources, allowedHosts });
}

function isPlainHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' && url.hostname !== '';
  } catch {
    return false;
  }
}
