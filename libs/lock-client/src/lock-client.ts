import { SESSION_TTL_MAX_MS, SESSION_TTL_MIN_MS } from '@dlock/lock-api';
import { LockSession } from './lock-session';
import {
  CALL_BUDGETS,
  resolveOptions,
  ttl,
  type LockClientOptions,
  type ResolvedOptions,
} from './options';
import { LockServerApi } from './wire';

export interface OpenSessionOptions {
  /** Requested TTL; defaults to the client's `sessionTtlMs`. The server may grant less. */
  ttlMs?: number;
  signal?: AbortSignal;
}

/**
 * Entry point of the SDK: holds the validated options and opens sessions.
 * Stateless beyond that; no ambient token, no global state.
 */
export class LockClient {
  private readonly options: ResolvedOptions;
  private readonly api: LockServerApi;

  constructor(options: LockClientOptions) {
    this.options = resolveOptions(options);
    this.api = new LockServerApi(
      this.options.baseUrl,
      this.options.ownerId,
      this.options.transport,
    );
  }

  get ownerId(): string {
    return this.options.ownerId;
  }

  /** L1, one try. The session heartbeats on its own from here until close() or loss. */
  async openSession(options: OpenSessionOptions = {}): Promise<LockSession> {
    const ttlMs = ttl(
      'ttlMs',
      options.ttlMs ?? this.options.sessionTtlMs,
      SESSION_TTL_MIN_MS,
      SESSION_TTL_MAX_MS,
    );
    const sentAtMs = this.options.clock.nowMs();
    const opened = await this.api.openSession(ttlMs, {
      budget: CALL_BUDGETS.session,
      signal: options.signal,
    });
    // Granted may be clamped down, never up: trust the smaller of the two.
    const granted = { ...opened, ttlMillis: Math.min(opened.ttlMillis, ttlMs) };
    return new LockSession(this.options, this.api, granted, sentAtMs);
  }
}
