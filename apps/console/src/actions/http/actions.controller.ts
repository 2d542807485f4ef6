import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { SignedIn } from '../../sessions/http/signed-in.decorator';
import type { ConsoleSession } from '../../sessions/service/session-store.service';
import { ActionsService } from '../service/actions.service';
import {
  AbandonActionBody,
  ApproveActionBody,
  ResolveActionBody,
  RevokeActionBody,
} from './actions.dto';

/**
 * The page's break-glass actions, taken as the person signed in (the session
 * gate refuses every one without a session or its anti-CSRF token). Parses
 * and maps; the service holds the rules.
 */
@Controller('api')
export class ActionsController {
  constructor(private readonly actions: ActionsService) {}

  @Post('actions/revoke')
  @HttpCode(200)
  revoke(@SignedIn() actor: ConsoleSession, @Body() body: RevokeActionBody) {
    return this.actions.revoke(actor, body.key, body.reason, body.expectedToken);
  }

  @Post('actions/approve')
  @HttpCode(200)
  approve(@SignedIn() actor: ConsoleSession, @Body() body: ApproveActionBody) {
    return this.actions.approve(actor, body.requestId);
  }

  @Post('actions/abandon')
  @HttpCode(200)
  abandon(@SignedIn() actor: ConsoleSession, @Body() body: AbandonActionBody) {
    return this.actions.abandon(actor, body.payoutId, body.reason);
  }

  @Post('actions/resolve')
  @HttpCode(200)
  resolve(@SignedIn() actor: ConsoleSession, @Body() body: ResolveActionBody) {
    const { payoutId, ...verdict } = body;
    return this.actions.resolve(actor, payoutId, verdict);
  }
}
