import { Body, Controller, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiCreatedResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ValidationError } from '@dlock/lock-api';
import {
  ApiContractErrors,
  ApiOwnerIdHeader,
  CallerIdentity,
  Operation,
  OwnerIdParam,
  ownerIdHeader,
} from '@dlock/http-contract';
import { ForbiddenError, type VerifiedIdentity } from '@dlock/identity';
import { SessionService } from '../service/session.service';
import { OpenSessionBody } from '../../http/lock-server.dto';
import { parseSessionId } from '../../http/lock-server.params';
import {
  HEARTBEAT_SCHEMA,
  heartbeatView,
  SESSION_SCHEMA,
  sessionView,
} from '../../http/lock-server.views';
import { OwnerUpkeepRoute } from '../../http/owner-upkeep.decorator';

const SESSION_PARAM = ApiParam({ name: 'sessionId', schema: { type: 'string', format: 'uuid' } });
const SESSION_UPKEEP_ERRORS = [
  'SESSION_UNKNOWN',
  'SESSION_EXPIRED',
  'NOT_LEADER',
  'FORBIDDEN',
] as const satisfies Parameters<typeof OwnerUpkeepRoute>[0]['errors'];

/** L1–L3: open, keep alive and close lock sessions (docs/lock-server.md#endpoints). */
@ApiTags('sessions')
@Controller('v1/sessions')
export class SessionsController {
  constructor(private readonly sessions: SessionService) {}

  /**
   * L1: ownerId from the body or X-Owner-Id (both present must agree). The
   * owner is the caller's identity: a body naming anyone else is 403 (the
   * header was checked at the gate, docs/security.md).
   */
  @ApiOperation({ summary: 'Open a session for the caller (locks attach to it)' })
  @ApiOwnerIdHeader(false)
  @ApiCreatedResponse({ description: 'Opened', schema: SESSION_SCHEMA })
  @ApiContractErrors('CONTENTION_EXCEEDED', 'NOT_LEADER')
  @Post()
  @Operation('sessions.open')
  async open(
    @Body() body: OpenSessionBody,
    @Req() req: Request,
    @CallerIdentity() caller: VerifiedIdentity,
  ) {
    const header = ownerIdHeader(req, false);
    if (body.ownerId !== undefined && header !== undefined && body.ownerId !== header) {
      throw new ValidationError([
        { field: 'ownerId', message: 'body ownerId and X-Owner-Id disagree' },
      ]);
    }
    const ownerId = body.ownerId ?? header;
    if (ownerId === undefined) {
      throw new ValidationError([
        { field: 'ownerId', message: 'ownerId (body) or X-Owner-Id (header) is required' },
      ]);
    }
    if (ownerId !== caller.subject) {
      throw new ForbiddenError('ownerId is not the authenticated identity', { field: 'ownerId' });
    }
    return sessionView(await this.sessions.open(ownerId, body.ttlMillis ?? undefined));
  }

  /** L2 — keep a session alive (docs/lock-server.md#endpoints). */
  @OwnerUpkeepRoute({
    summary: 'Keep a session alive',
    target: [SESSION_PARAM],
    answer: { post: ':sessionId/heartbeat', description: 'Extended', schema: HEARTBEAT_SCHEMA },
    operation: 'sessions.heartbeat',
    errors: SESSION_UPKEEP_ERRORS,
  })
  async heartbeat(@Param('sessionId') sessionId: string, @OwnerIdParam() ownerId: string) {
    return heartbeatView(await this.sessions.heartbeat(ownerId, parseSessionId(sessionId)));
  }

  /**
   * L3: 204, and every lock of the session is released; the session is CLOSED and answers
   * 410 (details.state CLOSED) until the retention ends (docs/lock-server.md, "Session states").
   */
  @OwnerUpkeepRoute({
    summary: 'Close a session, releasing every lock attached to it',
    target: [SESSION_PARAM],
    answer: { delete: ':sessionId', description: 'Closed (or already expired: it stays EXPIRED)' },
    operation: 'sessions.close',
    errors: SESSION_UPKEEP_ERRORS,
  })
  async close(@Param('sessionId') sessionId: string, @OwnerIdParam() ownerId: string) {
    await this.sessions.close(ownerId, parseSessionId(sessionId));
  }
}
