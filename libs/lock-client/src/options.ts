import {
  LOCK_TTL_MAX_MS,
  LOCK_TTL_MIN_MS,
  OWNER_ID_MAX_LENGTH,
  SESSION_TTL_MAX_MS,
  SESSION_TTL_MIN_MS,
} from '@dlock/lock-api';
import type { TokenProvider } from '@dlock/identity';
import { monotonicClock, type Clock } from './clock';
import type { HeaderProvider, Transport } from './transport';
import { nodeHttpTransport, withBearerToken, withHeaders } from './transport';

/** Connect and read timeouts of one call (docs/contract.md). */
export interface CallBudget {
  connectTimeoutMs: number;
  readTimeoutMs: number;
}

/** docs/contract.md, per hop. Fixed: these are contract numbers, not tuning knobs. */
export const CALL_BUDGETS = Object.freeze({
  acquire: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 2_000 }),
  heartbeat: Object.freeze({ connectTimeoutMs: 300, readTimeoutMs: 1_000 }),
  renew: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 2_000 }),
  release: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 2_000 }),
  /** L1 and L3 are not in the table; they get the renew/release budget. */
  session: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 2_000 }),
}) satisfies Record<string, CallBudget>;

/**
 * Heartbeat tries per round: one try and 2 retries (docs/contract.md, "Retry counts"), all inside one third of the
 * session TTL, each trimmed to what is left of the round (docs/lock-client.md).
 */
export const HEARTBEAT_TRIES = 3;

/** L5: one retry (docs/contract.md). A renew sets the lease under the same token, so sending it twice is harmless. */
export const RENEW_TRIES = 2;

export const DEFAULT_SAFETY_MARGIN = 0.3;
export const DEFAULT_SESSION_TTL_MS = 15_000;
export const DEFAULT_LOCK_TTL_MS = 15_000;

/** Logger in pino's argument order; a pino logger fits as is. */
export interface LockClientLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Why the SDK told the application it no longer holds something. */
export type LossReason =
  | 'session_deadline' // the session's local deadline passed (no heartbeat got through)
  | 'lock_deadline' // the lock's own local lease deadline passed (not renewed in time)
  | 'session_expired' // the server answered SESSION_EXPIRED (410)
  | 'session_unknown' // the server answered SESSION_UNKNOWN (404)
  | 'lock_lost' // renew answered LOCK_LOST (409)
  | 'session_closed'; // close() was called while the lock was held

/** Fields of a `session_lost` safety event (docs/operations.md). No metric labels come from these. */
export interface SessionLostFields extends Record<string, unknown> {
  reason: LossReason;
  /** `session`: the whole session and all its locks; `lock`: one lock, the session lives on. */
  scope: 'session' | 'lock';
  ownerId: string;
  sessionId: string;
  /** Set when scope is `lock`. */
  key?: string;
  /** Locks the application was told it lost by this event. */
  lostLockCount: number;
}

/**
 * Hook for the host's safety events. The SDK has no metrics or logging
 * dependency; the executor wires `onSafetyEvent` to `SafetyEvents.sessionLost`,
 * which logs `event=session_lost` and counts `lock_session_lost_total`.
 */
export interface LockClientEvents {
  onSafetyEvent(event: 'session_lost', fields: SessionLostFields): void;
}

export interface LockClientOptions {
  /** lock-server base URL, e.g. `http://127.0.0.1:8081` (LOCK_SERVER_URL). Plain http only. */
  baseUrl: string;
  /** Sent as X-Owner-Id on every call (FR-30); 1..64 printable ASCII. The token's subject must equal it. */
  ownerId: string;
  /**
   * Returns this caller's current service token for the lock-server (audience
   * `lock-server`), sent as `Authorization: Bearer` on every call; asked once
   * per call, so a rotated token needs no restart (docs/security.md). Without
   * it every call is refused with 401 UNAUTHENTICATED.
   */
  token?: TokenProvider;
  /**
   * Extra headers of every call, asked for on each: a delegating caller's
   * X-Acting-For (the console acting for the person signed in, docs/security.md).
   */
  headers?: HeaderProvider;
  /** LOCK_CLIENT_SAFETY_MARGIN: fraction of each granted TTL the client gives up early. */
  safetyMargin?: number;
  /** Requested session TTL (LOCK_SESSION_TTL_MS); the server may clamp it down. */
  sessionTtlMs?: number;
  /** Default lock lease TTL for acquire (LOCK_DEFAULT_TTL_MS). */
  lockTtlMs?: number;
  events?: LockClientEvents;
  logger?: LockClientLogger;
  /** Test seams. */
  clock?: Clock;
  random?: () => number;
  transport?: Transport;
}

export interface ResolvedOptions {
  baseUrl: URL;
  ownerId: string;
  safetyMargin: number;
  sessionTtlMs: number;
  lockTtlMs: number;
  events?: LockClientEvents;
  logger: LockClientLogger;
  clock: Clock;
  random: () => number;
  transport: Transport;
}

const noop = () => undefined;
export const SILENT_LOGGER: LockClientLogger = { debug: noop, info: noop, warn: noop, error: noop };

/** Validates once, at construction: a bad option fails loudly before any lock is taken. */
export function resolveOptions(options: LockClientOptions): ResolvedOptions {
  let baseUrl: URL;
  try {
    baseUrl = new URL(options.baseUrl);
  } catch {
    throw new RangeError(`lock-client baseUrl is not a URL: ${String(options.baseUrl)}`);
  }
  if (baseUrl.protocol !== 'http:')
    throw new RangeError(`lock-client baseUrl must be http://, got ${baseUrl.protocol}`);
  const { ownerId } = options;
  if (
    typeof ownerId !== 'string' ||
    ownerId.length < 1 ||
    ownerId.length > OWNER_ID_MAX_LENGTH ||
    !/^[\x20-\x7e]+$/.test(ownerId)
  )
    throw new RangeError(`lock-client ownerId must be 1..${OWNER_ID_MAX_LENGTH} printable ASCII`);
  const safetyMargin = options.safetyMargin ?? DEFAULT_SAFETY_MARGIN;
  // Above 2/3 the session deadline would pass before the next heartbeat (every ttl/3) is due.
  if (!(safetyMargin > 0 && safetyMargin < 2 / 3))
    throw new RangeError(`lock-client safetyMargin must be > 0 and < 2/3, got ${safetyMargin}`);
  const sessionTtlMs = ttl(
    'sessionTtlMs',
    options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    SESSION_TTL_MIN_MS,
    SESSION_TTL_MAX_MS,
  );
  const lockTtlMs = ttl(
    'lockTtlMs',
    options.lockTtlMs ?? DEFAULT_LOCK_TTL_MS,
    LOCK_TTL_MIN_MS,
    LOCK_TTL_MAX_MS,
  );
  return {
    baseUrl,
    ownerId,
    safetyMargin,
    sessionTtlMs,
    lockTtlMs,
    events: options.events,
    logger: options.logger ?? SILENT_LOGGER,
    clock: options.clock ?? monotonicClock,
    random: options.random ?? Math.random,
    transport: withToken(
      withExtraHeaders(options.transport ?? nodeHttpTransport(), options.headers),
      options.token,
    ),
  };
}

function withExtraHeaders(transport: Transport, headers: HeaderProvider | undefined): Transport {
  if (headers === undefined) return transport;
  if (typeof headers !== 'function') throw new RangeError('lock-client headers must be a function');
  return withHeaders(transport, headers);
}

function withToken(transport: Transport, token: TokenProvider | undefined): Transport {
  if (token === undefined) return transport;
  if (typeof token !== 'function') throw new RangeError('lock-client token must be a function');
  return withBearerToken(transport, token);
}

export function ttl(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`lock-client ${name} must be an integer in ${min}..${max}, got ${value}`);
  return value;
}
