import { Inject, Injectable } from '@nestjs/common';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from '../config';
import {
  SessionRegistry,
  type HeartbeatResult,
  type OpenedSession,
} from '../store/lock-store.port';
import { LockService } from './lock.service';

/** L1-L3: session lifecycle; a requested TTL is clamped down to LOCK_SESSION_TTL_MAX_MS. */
@Injectable()
export class SessionService {
  constructor(
    private readonly registry: SessionRegistry,
    private readonly locks: LockService,
    @Inject(LOCK_SERVER_CONFIG) private readonly config: LockServerConfig,
  ) {}

  open(ownerId: string, ttlMillis?: number): Promise<OpenedSession> {
    const granted = Math.min(
      ttlMillis ?? this.config.LOCK_SESSION_TTL_MS,
      this.config.LOCK_SESSION_TTL_MAX_MS,
    );
    return this.locks.lockMetrics.session('open', () => this.registry.open(ownerId, granted));
  }

  heartbeat(sessionId: string): Promise<HeartbeatResult> {
    return this.locks.lockMetrics.session('heartbeat', () => this.registry.heartbeat(sessionId));
  }

  close(sessionId: string): Promise<void> {
    return this.locks.lockMetrics.session('close', () => this.registry.close(sessionId));
  }
}
