import { Controller, Query } from '@nestjs/common';
import { formatFencingToken, type LockListDto, type SessionListDto } from '@dlock/lock-api';
import { AdvisoryListRoute, readLimit } from '@dlock/http-contract';
import { ApiTags } from '@nestjs/swagger';
import { Listings } from '../service/listings.service';
import { LOCK_LIST_SCHEMA, SESSION_LIST_SCHEMA } from '../../http/lock-server.views';

/**
 * Advisory listings for the operator console (docs/lock-server.md,
 * "Listings"): what is held and who is alive right now. Like L7 they decide
 * nothing; only the fenced write does.
 */
@ApiTags('locks')
@Controller('v1/locks')
export class LockListingController {
  constructor(private readonly listings: Listings) {}

  @AdvisoryListRoute({
    summary: 'Locks held now, by key (advisory)',
    operation: 'locks.list',
    description: 'Held locks',
    schema: LOCK_LIST_SCHEMA,
  })
  async list(@Query() query: Record<string, unknown>): Promise<LockListDto> {
    const { items, truncated } = await this.listings.heldLocks(readLimit(query));
    return {
      locks: items.map((l) => ({
        key: l.key,
        ownerId: l.ownerId,
        sessionId: l.sessionId,
        token: formatFencingToken(l.fencingToken),
        leaseRemainingMillis: l.leaseRemainingMillis,
      })),
      truncated,
    };
  }
}

@ApiTags('sessions')
@Controller('v1/sessions')
export class SessionListingController {
  constructor(private readonly listings: Listings) {}

  @AdvisoryListRoute({
    summary: 'Live sessions, by id (advisory)',
    operation: 'sessions.list',
    description: 'Live sessions',
    schema: SESSION_LIST_SCHEMA,
  })
  async list(@Query() query: Record<string, unknown>): Promise<SessionListDto> {
    const { items, truncated } = await this.listings.liveSessions(readLimit(query));
    return {
      sessions: items.map((s) => ({
        sessionId: s.sessionId,
        ownerId: s.ownerId,
        state: s.state,
        ttlMillis: s.ttlMillis,
        ttlRemainingMillis: s.ttlRemainingMillis,
        locksHeld: s.locksHeld,
      })),
      truncated,
    };
  }
}
