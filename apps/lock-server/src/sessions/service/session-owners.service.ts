import { Injectable } from '@nestjs/common';
import { ForbiddenError } from '@dlock/identity';
import { SessionRegistry } from '../../locks/persistence/lock-store.port';

/** Sessions whose owner this process remembers; beyond it the memo starts over (bounded memory). */
const OWNERS_REMEMBERED_MAX = 100_000;

/**
 * A session belongs to the identity that opened it (docs/security.md):
 * heartbeat, close, acquire and renew on it by anyone else are 403 FORBIDDEN
 * before anything changes. A session's owner never changes and its id is never
 * reused, so the answer is remembered: a steady worker pays one read per
 * session per replica.
 */
@Injectable()
export class SessionOwners {
  private readonly owners = new Map<string, string>();

  constructor(private readonly registry: SessionRegistry) {}

  /** Refuses `caller` on someone else's session; an unknown id is left to the operation to answer. */
  async check(sessionId: string, caller: string): Promise<void> {
    let owner = this.owners.get(sessionId);
    if (owner === undefined) {
      const found = await this.registry.ownerOf(sessionId);
      if (found === null) return;
      owner = found;
      if (this.owners.size >= OWNERS_REMEMBERED_MAX) this.owners.clear();
      this.owners.set(sessionId, owner);
    }
    if (owner !== caller) {
      throw new ForbiddenError('this session belongs to another identity', {
        reason: 'not-session-owner',
      });
    }
  }

  /** A closed session: its id is never reused, and its owner is looked up again if asked. */
  forget(sessionId: string): void {
    this.owners.delete(sessionId);
  }

  /** A session just opened by `owner`: its first request needs no read. */
  remember(sessionId: string, owner: string): void {
    if (this.owners.size >= OWNERS_REMEMBERED_MAX) this.owners.clear();
    this.owners.set(sessionId, owner);
  }
}
