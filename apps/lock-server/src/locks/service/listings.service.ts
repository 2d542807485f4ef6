import { Injectable } from '@nestjs/common';
import { LockStore, SessionRegistry } from '../persistence/lock-store.port';
import type { Listing, ListedLock, ListedSession } from '../domain/lock.types';

/**
 * The advisory listings the operator console shows (docs/lock-server.md,
 * "Listings"): what the store holds now. They decide nothing.
 */
@Injectable()
export class Listings {
  constructor(
    private readonly store: LockStore,
    private readonly sessions: SessionRegistry,
  ) {}

  heldLocks(limit: number): Promise<Listing<ListedLock>> {
    return this.store.listHeld(limit);
  }

  liveSessions(limit: number): Promise<Listing<ListedSession>> {
    return this.sessions.listLive(limit);
  }
}
