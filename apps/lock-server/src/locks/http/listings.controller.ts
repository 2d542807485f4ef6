import { Controller, Get, Query } from '@nestjs/common';
import { formatFencingToken, type LockListDto, type SessionListDto } from '@dlock/lock-api';
import { ApiReadLimitQuery, Operation, parseIntQuery, READ_LIMIT } from '@dlock/http-contract';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Listings } from '../service/listings.service';
import { LOCK_LIST_SCHEMA, SESSION_LIST_SCHEMA } from '../../http/lock-server.views';

const QUERY = { limit: READ_LIMIT };

/**
 * Advisory listings for the operator console (docs/lock-server.md,
 * "Listings"): what is held and who is alive right now. Like L7 they decide
 * nothing; only the fenced write does.
 */
@ApiTags('locks')
@Controller('v1/locks')
export class LockListingController {
  constructor(private readonly listings: Listings) {}

  @ApiOperation({ summary: 'Locks held now, by key (advisory)' })
  @ApiReadLimitQuery()
  @ApiOkResponse({ description: 'Held locks', schema: LOCK_LIST_SCHEMA })
  @Get()
  @Operation('locks.list')
  async list(@Query() query: Record<string, unknown>): Promise<LockListDto> {
    const { limit } = parseIntQuery(query, QUERY);
    const { items, truncated } = await this.listings.heldLocks(limit);
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

  @ApiOperation({ summary: 'Live sessions, by id (advisory)' })
  @ApiReadLimitQuery()
  @ApiOkResponse({ description: 'Live sessions', schema: SESSION_LIST_SCHEMA })
  @Get()
  @Operation('sessions.list')
  async list(@Query() query: Record<string, unknown>): Promise<SessionListDto> {
    const { limit } = parseIntQuery(query, QUERY);
    const { items, truncated } = await this.listings.liveSessions(limit);
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
