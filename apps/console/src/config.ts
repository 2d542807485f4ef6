import { EnvError, env, readEnv, type EnvOf } from '@dlock/config';
import { CALLER_AUTH_ENV } from '@dlock/identity';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Every variable the console reads (docs/console.md has the table). */
const schema = {
  PORT: env.int({ default: 8090, min: 0, max: 65535 }),
  /** Loopback by default: the page itself asks nobody who they are (docs/console.md). */
  CONSOLE_HOST: env.string({ default: '127.0.0.1', maxLength: 255 }),
  ...CALLER_AUTH_ENV,
  LOG_LEVEL: env.oneOf(LOG_LEVELS, { default: 'info' }),
  LOCK_SERVER_URL: env.peerUrl({ default: 'http://127.0.0.1:8081' }),
  PAYMENT_RESOURCE_URL: env.peerUrl({ default: 'http://127.0.0.1:8082' }),
  RAIL_PROXY_URL: env.peerUrl({ default: 'http://127.0.0.1:8083' }),
  /** Comma-separated executor base URLs whose safety events the feed shows (may be empty). */
  EXECUTOR_URLS: env.string({ default: '', maxLength: 4096 }),
  RECONCILER_URL: env.optionalUrl(),
  /** How often the feed asks each service for new safety events. */
  CONSOLE_EVENT_POLL_MS: env.int({ default: 1_000, min: 100, max: 60_000 }),
  /** Read budget of every call the console makes (connect is a quarter of it). */
  CONSOLE_CALL_TIMEOUT_MS: env.int({ default: 2_000, min: 100, max: 30_000 }),
  /** Safety events kept for a newly opened page. */
  CONSOLE_EVENT_BUFFER: env.int({ default: 200, min: 1, max: 10_000 }),
  /** Browsers streaming the feed at once. */
  CONSOLE_SSE_CLIENTS_MAX: env.int({ default: 32, min: 1, max: 1_000 }),
};

export type ConsoleConfig = EnvOf<typeof schema> & {
  /** Every service the feed polls, by the name shown on the page. */
  readonly eventSources: readonly { name: string; url: string }[];
};

export const CONSOLE_CONFIG = Symbol('CONSOLE_CONFIG');

/** Reads and validates the environment once; a bad value throws EnvError naming the variable. */
export function readConsoleConfig(
  source: Record<string, string | undefined> = process.env,
): ConsoleConfig {
  const raw = readEnv(schema, source);
  const executors: string[] = [];
  const problems: string[] = [];
  raw.EXECUTOR_URLS.split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '')
    .forEach((u, i) => {
      try {
        executors.push(env.peerUrl().parse(u, `EXECUTOR_URLS[${i}]`));
      } catch (err) {
        if (!(err instanceof EnvError)) throw err;
        problems.push(...err.problems);
      }
    });
  if (executors.length > 16) problems.push('EXECUTOR_URLS: at most 16 executors');
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
