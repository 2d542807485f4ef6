import {
  EnvError,
  EnvInt,
  EnvOneOf,
  EnvPeerUrl,
  EnvString,
  EnvUrl,
  validateEnv,
  type EnvSource,
} from '@dlock/config';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every variable the console reads (docs/console.md has the table). */
export class ConsoleEnv {
  /**
   * The operator's token directory (docs/security.md). The console only
   * sends tokens, it is never called with one, so it needs no AUTH_JWKS.
   */
  @EnvString({ maxLength: 1024 }) readonly AUTH_TOKEN_DIR!: string;
  @EnvInt({ default: 8090, min: 0, max: 65535 }) readonly PORT!: number;
  /** Loopback by default: the page itself asks nobody who they are (docs/console.md). */
  @EnvString({ default: '127.0.0.1', maxLength: 255 }) readonly CONSOLE_HOST!: string;
  @EnvOneOf(LOG_LEVELS, { default: 'info' }) readonly LOG_LEVEL!: (typeof LOG_LEVELS)[number];
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
}

const EXECUTORS_MAX = 16;

export type ConsoleConfig = ConsoleEnv & {
  /** Every service the feed polls, by the name shown on the page. */
  readonly eventSources: readonly { name: string; url: string }[];
};

export const CONSOLE_CONFIG = Symbol('CONSOLE_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readConsoleConfig(source: EnvSource = process.env): ConsoleConfig {
  const raw = validateEnv(ConsoleEnv, source);
  const executors = raw.EXECUTOR_URLS.split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  const problems = executors.flatMap((u, i) =>
    isPlainHttpUrl(u) ? [] : [`EXECUTOR_URLS[${i}]: must be an http:// URL of a dlock service`],
  );
  if (executors.length > EXECUTORS_MAX)
    problems.push(`EXECUTOR_URLS: at most ${EXECUTORS_MAX} executors`);
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
  return Object.freeze({ ...raw, eventSources });
}

function isPlainHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' && url.hostname !== '';
  } catch {
    return false;
  }
}
