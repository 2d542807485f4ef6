import { fileTokenProvider } from '@dlock/identity';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockClient, type LockClientLogger, type LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../config';

/**
 * The reconciler's one lock-server session, opened when first needed and
 * re-opened after a loss. Failing to open it fails the pass closed: no write
 * happens without a grant (INV-07, FR-27).
 */
@Injectable()
export class LockSessions {
  private readonly logger = new Logger('lock-client');
  private readonly client: LockClient;
  private current: LockSession | undefined;
  private opening: Promise<LockSession> | undefined;

  constructor(@Inject(RECONCILER_CONFIG) config: ReconcilerConfig, safety: SafetyEvents) {
    const log = this.logger;
    const logger: LockClientLogger = {
      debug: (fields, message) => log.debug(fields, message),
      info: (fields, message) => log.log(fields, message),
      warn: (fields, message) => log.warn(fields, message),
      error: (fields, message) => log.error(fields, message),
    };
    this.client = new LockClient({
      baseUrl: config.LOCK_SERVER_URL,
      ownerId: config.OWNER_ID,
      token: fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
      safetyMargin: config.LOCK_CLIENT_SAFETY_MARGIN,
      sessionTtlMs: config.LOCK_SESSION_TTL_MS,
      lockTtlMs: config.LOCK_DEFAULT_TTL_MS,
      logger,
      events: { onSafetyEvent: (_event, fields) => safety.sessionLost(fields) },
    });
  }

  async session(signal?: AbortSignal): Promise<LockSession> {
    if (this.current?.state === 'open') return this.current;
    this.opening ??= this.client
      .openSession({ signal })
      .then((s) => (this.current = s))
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** Releases every lock of the session server-side (L3). Never rejects. */
  async close(): Promise<void> {
    const s = this.current;
    this.current = undefined;
    if (s) await s.close();
  }
}
