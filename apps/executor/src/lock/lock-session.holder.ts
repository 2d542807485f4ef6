import { fileTokenProvider } from '@dlock/identity';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockClient, type LockClientLogger, type LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import { EXECUTOR_CONFIG, type ExecutorConfig } from '../config';

/**
 * The executor's one lock-server session (03 §3.4 flow A: opened once, kept
 * heartbeating by the SDK, reused for every payout). A lost session is
 * replaced by a new one on the next pass; its locks are gone with it.
 */
@Injectable()
export class LockSessionHolder {
  private readonly logger = new Logger('lock-session');
  private readonly client: LockClient;
  private session: LockSession | undefined;
  private opening: Promise<LockSession> | undefined;
  private closed = false;

  constructor(@Inject(EXECUTOR_CONFIG) config: ExecutorConfig, safety: SafetyEvents) {
    const sdkLogger = this.sdkLogger();
    this.client = new LockClient({
      baseUrl: config.LOCK_SERVER_URL,
      ownerId: config.OWNER_ID,
      token: fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
      safetyMargin: config.LOCK_CLIENT_SAFETY_MARGIN,
      sessionTtlMs: config.LOCK_SESSION_TTL_MS,
      lockTtlMs: config.LOCK_DEFAULT_TTL_MS,
      logger: sdkLogger,
      // The one place session_lost is logged and counted (lock_session_lost_total).
      events: { onSafetyEvent: (_event, fields) => safety.sessionLost(fields) },
    });
  }

  get isOpen(): boolean {
    return this.session?.state === 'open';
  }

  /** The open session, opening a new one if there is none (one L1 try; throws when unreachable). */
  async current(): Promise<LockSession> {
    if (this.closed) throw new Error('executor is shutting down: no new lock session');
    if (this.session?.state === 'open') return this.session;
    this.opening ??= this.client
      .openSession()
      .then((session) => {
        this.session = session;
        this.logger.log(
          { sessionId: session.sessionId, ttlMs: session.ttlMs },
          'lock session opened',
        );
        return session;
      })
      .finally(() => {
        this.opening = undefined;
      });
    return this.opening;
  }

  /** L3 at shutdown: releases whatever the session still holds. Never rejects. */
  async close(): Promise<void> {
    this.closed = true;
    await this.opening?.catch(() => undefined);
    await this.session?.close();
  }

  /**
   * The SDK logs its own `event=session_lost` line as well; the field is
   * renamed here so the SafetyEvents line stays the only one carrying it.
   */
  private sdkLogger(): LockClientLogger {
    const strip = (fields: Record<string, unknown>) => {
      if (!('event' in fields)) return fields;
      const { event, ...rest } = fields;
      return { ...rest, sdkEvent: event };
    };
    return {
      debug: (fields, message) => this.logger.debug(strip(fields), message),
      info: (fields, message) => this.logger.log(strip(fields), message),
      warn: (fields, message) => this.logger.warn(strip(fields), message),
      error: (fields, message) => this.logger.error(strip(fields), message),
    };
  }
}
