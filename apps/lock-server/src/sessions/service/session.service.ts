import { Inject, Injectable } from '@nestjs/common';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../../config';
import {
  SessionRegistry,
  type HeartbeatResult,
  type OpenedSession,
} from '../../locks/persistence/lock-store.port';
import { LockService } from '../../locks/service/lock.service';
import { OwnerCaps } from './owner-caps.service';
import { SessionOwners } from './session-owners.service';

/**
 * L1-L3: session lifecycle; a requested TTL is clamped down to
 * LOCK_SESSION_TTL_MAX_MS, and an owner opens at most LOCK_SESSIONS_PER_OWNER_MAX. Only a session's owner may keep it alive or close
 * it (docs/security.md).
 */
@Injectable()
export class SessionService {
  constructor(
    private readonly registry: SessionRegistry,
    private readonly locks: LockService,
    private readonly owners: SessionOwners,
    private readonly caps: OwnerCaps,
    @Inject(LOCK_SERVER_CONFIG) private readonly config: LockServerConfig,
  ) {}

  open(ownerId: string, ttlMillis?: number): Promise<OpenedSession> {
    const granted = Math.min(
      ttlMillis ?? this.config.LOCK_SESSION_TTL_MS,
      this.config.LOCK_SESSION_TTL_MAX_MS,
    );
    return this.locks.lockMetrics.session('open', async () => {
      await this.caps.checkOpen(ownerId);
      const opened = await this.registry.open(ownerId, granted);
      this.caps.opened(ownerId);
      this.owners.remember(opened.sessionId, opened.ownerId);
      return opened;
    });
  }

  heartbeat(caller: string, sessionId: string): Promise<HeartbeatResult> {
    return this.locks.lockMetrics.session('heartbeat', async () => {
      await this.owners.check(sessionId, caller);
      return this.registry.heartbeat(sessionId);
    });
  }

  close(caller: string, sessionId: string): Promise<void> {
    return this.locks.lockMetrics.session('close', async () => {
      await this.owners.check(sessionId, caller);
      await this.registry.close(sessionId);
      this.owners.forget(sessionId);
      this.caps.forget(caller);
    });
  }
}
